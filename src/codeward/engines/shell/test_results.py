"""Test runs made readable: which runner a project uses, and pytest's JUnit XML as structured results.

The XML comes out of a sandboxed run of the project's own code, so it is untrusted: it is size
bounded, refused if it declares a DTD or entities (the expansion attacks), and read for what
pytest writes (``testsuite`` counts, ``testcase`` with ``failure``/``error``/``skipped``).
"""

from __future__ import annotations

import configparser
import re
import tomllib
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

MAX_XML_BYTES = 32 << 20
MAX_MESSAGE_CHARS = 2_000
_LOCATION = re.compile(r"^(?P<path>[^\s:][^:\n]*\.py):(?P<line>\d+):", re.MULTILINE)


@dataclass(frozen=True)
class Failure:
    test_id: str
    kind: str
    """failed (an assertion or exception in the test) or error (in a fixture, setup or collection)."""
    path: str
    line: int
    message: str


@dataclass
class TestSummary:
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.errors + self.skipped


def uses_pytest(root: Path) -> str:
    """Why the project looks like a pytest project ("" when it does not)."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8", errors="replace"))
        except tomllib.TOMLDecodeError:
            data = {}
        if "pytest" in data.get("tool", {}):
            return "pyproject.toml has [tool.pytest...]"
    if (root / "pytest.ini").is_file():
        return "pytest.ini"
    for name, section in (("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(root / name, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        if parser.has_section(section):
            return f"{name} has [{section}]"
    if (root / "conftest.py").is_file():
        return "conftest.py"
    for folder in (root / "tests", root / "test"):
        if folder.is_dir() and any(folder.glob("test_*.py")):
            return f"{folder.name}/test_*.py"
    return ""


def parse_junit(data: bytes, root: Path) -> TestSummary | None:
    """pytest's JUnit XML as a summary (None when it is not such a report, or unsafe to read)."""
    if len(data) > MAX_XML_BYTES or b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        return None
    try:
        tree = ElementTree.fromstring(data)
    except ElementTree.ParseError:
        return None
    suites = [tree] if tree.tag == "testsuite" else tree.findall("testsuite")
    if not suites:
        return None
    summary = TestSummary()
    for suite in suites:
        summary.seconds += _number(suite.get("time"))
        for case in suite.iter("testcase"):
            outcome = _outcome(case)
            if outcome is None:
                summary.passed += 1
                continue
            kind, element = outcome
            if kind == "skipped":
                summary.skipped += 1
                continue
            if kind == "failed":
                summary.failed += 1
            else:
                summary.errors += 1
            summary.failures.append(_failure(case, kind, element, root))
    return summary


def _outcome(case: ElementTree.Element) -> tuple[str, ElementTree.Element] | None:
    for tag, kind in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        element = case.find(tag)
        if element is not None:
            return kind, element
    return None


def _failure(case: ElementTree.Element, kind: str, element: ElementTree.Element, root: Path) -> Failure:
    classname = case.get("classname", "")
    name = case.get("name", "")
    path = case.get("file") or ""
    test_id = _test_id(classname, name, root)
    details = element.text or ""
    lines = details.strip().splitlines()
    message = element.get("message") or (lines[-1] if lines else "")
    line = int(case.get("line") or 0) + 1 if case.get("line") else 0
    located = list(_LOCATION.finditer(details))
    if located:  # the innermost frame inside the project: where it actually failed
        inside = [m for m in located if not Path(m.group("path")).is_absolute()
                  or Path(m.group("path")).is_relative_to(root)] or located
        last = inside[-1]
        path = _relative(last.group("path"), root)
        line = int(last.group("line"))
    return Failure(test_id, kind, path, line, message.strip()[:MAX_MESSAGE_CHARS])


def _test_id(classname: str, name: str, root: Path) -> str:
    """pytest's node id (``tests/test_x.py::TestY::test_z``) rebuilt from JUnit's dotted classname:
    the longest dotted prefix that is a file of the project is the module."""
    if not classname:
        return name
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        module = "/".join(parts[:cut]) + ".py"
        if (root / module).is_file():
            return "::".join([module, *parts[cut:], name])
    return f"{classname}::{name}"


def _relative(path: str, root: Path) -> str:
    candidate = Path(path)
    if candidate.is_absolute() and candidate.is_relative_to(root):
        return candidate.relative_to(root).as_posix()
    return path


def _number(text: str | None) -> float:
    try:
        return float(text or 0)
    except ValueError:
        return 0.0
