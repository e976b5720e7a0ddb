"""What a tool may install: exactly its declared, pinned ``__dependencies__`` — never a guess.

A third-party import is allowed only when a declared dependency provides it; nothing is ever
derived from an import name (a local module called ``helpers`` once made codeward install the
unrelated PyPI package ``helpers``). Each dependency is pinned (``name==version``), the list is
covered by the tool's signature, and it is installed with ``--no-deps``: what gets installed is
what the signer saw, nothing more. When a dependency needs others, the error lists the exact
pins to add (found with pip's resolver), so the human declares them too.

Installing runs no code from the packages: wheels only (``--only-binary=:all:``; building a
source distribution runs its ``setup.py``), unpacked with ``--target`` by codeward's own pip, so
no package's interpreter start-up hooks run on the host either. The tool later runs in the
sandbox with that folder on its path.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from codeward.engines.registry.items import Item, Problem

PIN = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)"
                 r"(\[[A-Za-z0-9._,-]+\])?==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")

WELL_KNOWN: dict[str, str] = {
    "yaml": "PyYAML",
    "PIL": "Pillow",
    "bs4": "beautifulsoup4",
    "cv2": "opencv-python",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "attr": "attrs",
    "Crypto": "pycryptodome",
    "magic": "python-magic",
    "serial": "pyserial",
    "git": "GitPython",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "fitz": "PyMuPDF",
    "multipart": "python-multipart",
    "slugify": "python-slugify",
    "zmq": "pyzmq",
    "usb": "pyusb",
}
"""Import names whose PyPI distribution has another name — used only to word a hint."""


@dataclass(frozen=True)
class Pin:
    name: str
    extras: str
    version: str

    @property
    def key(self) -> str:
        return canonical(self.name)

    def __str__(self) -> str:
        return f"{self.name}{self.extras}=={self.version}"


def canonical(name: str) -> str:
    """A distribution name as PyPI compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_pin(text: str) -> Pin | None:
    match = PIN.match(text.strip())
    if match is None:
        return None
    return Pin(match.group(1), match.group(2) or "", match.group(3))


def check_dependencies(values: Mapping[str, object], file: str) -> list[Problem]:
    """``__dependencies__`` must be a list of pins (``name==version``), each named once."""
    if "__dependencies__" not in values:
        return []
    deps = values["__dependencies__"]
    if not isinstance(deps, list | tuple) or not all(isinstance(d, str) for d in deps):
        return [Problem(file, "__dependencies__", "must be a list of pinned requirements",
                        'write e.g. __dependencies__ = ["humanize==4.9.0"]')]
    seen: set[str] = set()
    for text in deps:
        pin = parse_pin(text)
        if pin is None:
            name = re.split(r"[<>=!~;\[ ]", text.strip(), maxsplit=1)[0] or "name"
            return [Problem(file, "__dependencies__", f"{text!r} is not pinned to one version",
                            f'pin it: "{name}==VERSION" (`pip index versions {name}` lists them); what a tool '
                            "installs is exactly what its signature covers")]
        if pin.key in seen:
            return [Problem(file, "__dependencies__", f"{pin.name} is declared twice", "keep one pin")]
        seen.add(pin.key)
    return []


def requirements_of(item: Item) -> list[str]:
    """The pins to install for a tool, sorted (empty: the standard library is enough)."""
    declared = item.meta.get("dependencies")
    if not isinstance(declared, list):
        return []
    pins = [parse_pin(str(d)) for d in declared]
    return sorted(str(p) for p in pins if p is not None)


def undeclared_imports(third_party: Sequence[str], requirements: Sequence[str],
                       provided: Mapping[str, set[str]] | None) -> list[str]:
    """The imported names no declared dependency provides.

    ``provided`` maps import names to the distributions installed for the tool (read from the
    installed files); before anything is installed, a name counts as provided only by a
    dependency of the same (normalized) name or its well-known distribution.
    """
    declared = {parse_pin(r).key for r in requirements if parse_pin(r) is not None}  # type: ignore[union-attr]
    missing: list[str] = []
    for name in third_party:
        if provided is not None:
            ok = any(canonical(d) in declared for d in provided.get(name, set()))
        else:
            ok = canonical(name) in declared or canonical(WELL_KNOWN.get(name, name)) in declared
        if not ok:
            missing.append(name)
    return missing


def undeclared_fix(name: str, where: str) -> str:
    """How to fix an import that is neither standard, local nor declared."""
    guess = WELL_KNOWN.get(name, name)
    return (f"declare the PyPI package that provides it, pinned — __dependencies__ = [\"{guess}==VERSION\"] (the "
            f"package's name may differ from the import name) — or, if {name} is your own module, put {name}.py "
            f"beside {where} or in tools/lib; then sign the tool again")


def provided_names(site: Path) -> dict[str, set[str]]:
    """Import name → distributions, from the ``*.dist-info`` folders installed in ``site``."""
    found: dict[str, set[str]] = {}
    try:
        infos = [p for p in site.iterdir() if p.name.endswith(".dist-info") and p.is_dir()]
    except OSError:
        return found
    for info in infos:
        name = _metadata_name(info) or info.name.split("-")[0]
        for top in _top_levels(info):
            found.setdefault(top, set()).add(name)
    return found


def _metadata_name(info: Path) -> str:
    try:
        for line in (info / "METADATA").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Name:"):
                return line.split(":", 1)[1].strip()
            if not line.strip():
                break
    except OSError:
        pass
    return ""


def _top_levels(info: Path) -> set[str]:
    names: set[str] = set()
    with contextlib.suppress(OSError):
        names.update(line.strip() for line in (info / "top_level.txt").read_text(encoding="utf-8").splitlines()
                     if line.strip())
    try:
        for line in (info / "RECORD").read_text(encoding="utf-8", errors="replace").splitlines():
            first = line.split(",", 1)[0].split("/", 1)[0]
            if not first or first.startswith(("..", "__pycache__")) or first.endswith((".dist-info", ".data")):
                continue
            names.add(first[:-3] if first.endswith(".py") else first.split(".")[0])
    except OSError:
        pass
    return {n for n in names if n.isidentifier()}


def extra_requirements(report: Mapping[str, object], declared: Iterable[str]) -> list[str]:
    """Pins pip's resolver adds to ``declared`` (from ``pip install --dry-run --report``)."""
    wanted = {p.key for p in (parse_pin(d) for d in declared) if p is not None}
    extra: list[str] = []
    install = report.get("install")
    for entry in install if isinstance(install, list) else []:
        meta = entry.get("metadata") if isinstance(entry, dict) else None
        if not isinstance(meta, dict):
            continue
        name, version = str(meta.get("name", "")), str(meta.get("version", ""))
        if name and canonical(name) not in wanted:
            extra.append(f"{name}=={version}")
    return sorted(extra, key=str.lower)


def load_report(text: str) -> Mapping[str, object]:
    try:
        loaded = json.loads(text)
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}
