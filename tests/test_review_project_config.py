"""Review honours the project's own analyzer configuration, as ruff and mypy do; --isolated does not.

The ground truth is ruff itself: on a vendored copy of a real package (iniconfig, with its
own ``[tool.ruff]`` and ``[tool.mypy]``) plus a planted module, codeward's lint findings must
be exactly those of ``ruff check`` run in the project, and with ``isolated`` exactly those of
``ruff check --isolated`` with codeward's fixed rules. A configuration is written by whoever
writes the project, so the options that would run code or write outside the review are
attacked too, as root and without any capability.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codeward.config import ReviewSettings
from codeward.engines.review.analyzers.ruff import RULES
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.workspace import Workspace
from tests.conftest import REPO, snapshot

VENDORED = REPO / "tests" / "fixtures" / "review" / "iniconfig"
RUFF = str(Path(sys.executable).parent / "ruff")

PLANTED = '''\
import os, sys
from typing import List
import pytest
from iniconfig import IniConfig, ParseError


@pytest.fixture()
def sample():
    return IniConfig("x", data="[a]\\nb = 1\\n")


def test_planted(sample) -> None:{trailing}
    values: List[int] = [1]
    try:
        assert sample["a"]["b"] == "1"
    except KeyError:
        raise ValueError("missing")
    print(os, sys, values, ParseError)


def untyped(value):
    return value
'''
"""Breaks rules the project selects (isort, pyupgrade, pytest-style, bugbear) and some it does not (W291)."""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vendored") / "iniconfig"
    shutil.copytree(VENDORED, root)
    (root / "testing" / "test_planted.py").write_text(PLANTED.format(trailing="   "))
    return root


def _ruff_check(root: Path, *options: str) -> set[tuple[str, int, int, str]]:
    """``ruff check`` as a developer runs it in the project's folder."""
    done = subprocess.run([RUFF, "check", "--no-cache", "--output-format", "json", "--exit-zero", *options, "."],
                          cwd=root, capture_output=True, text=True, timeout=120, check=True)
    return {(str(Path(r["filename"]).relative_to(root)), r["location"]["row"], r["location"]["column"], r["code"])
            for r in json.loads(done.stdout)}


def _analyze(root: Path, catalog: Catalog, types: list[str], **config: Any) -> dict[str, Any]:
    ctx = ToolContext(Workspace.create([root]))
    ctx.services = ctx.services.with_values(ReviewSettings(**config))
    outcome = catalog.call("coding_analyze_project", {"path": ".", "analysis_types": types}, ctx)
    assert not outcome.is_error, outcome.text
    assert outcome.structured is not None
    return outcome.structured


def _lint(root: Path, catalog: Catalog, **config: Any) -> set[tuple[str, int, int, str]]:
    """codeward's lint findings, every one of them (from the saved report, not only the top 20)."""
    ctx = ToolContext(Workspace.create([root]))
    ctx.services = ctx.services.with_values(ReviewSettings(**config))
    report = root / "lint-report.json"
    outcome = catalog.call("coding_analyze_project", {"path": ".", "analysis_types": ["lint"],
                                                      "output_path": report.name, "report_format": "json"}, ctx)
    assert not outcome.is_error, outcome.text
    issues = json.loads(report.read_text())["analysis"]["issues"]
    report.unlink()
    return {(i["file"], i["line"], i["column"], i["rule"]) for i in issues}


def test_lint_findings_are_exactly_ruff_checks_with_the_projects_configuration(project: Path,
                                                                                 catalog: Catalog) -> None:
    expected = _ruff_check(project)
    assert {"I001", "UP035", "PT001", "B904", "RUF022"} <= {code for *_, code in expected}
    found = _lint(project, catalog)
    assert found == expected
    result = _analyze(project, catalog, ["lint"])
    assert "configuration: pyproject.toml" in result["analyses"][0]["message"]


def test_isolated_lint_is_ruff_isolated_with_codewards_rules(project: Path, catalog: Catalog) -> None:
    expected = _ruff_check(project, "--isolated", "--select", RULES)
    found = _lint(project, catalog, isolated=True)
    assert found == expected
    assert ("testing/test_planted.py", 12, 34, "W291") in found  # the project does not select W
    assert not {code for *_, code in found} & {"I001", "PT001", "UP035"}  # only the project selects those
    assert "isolated" in _analyze(project, catalog, ["lint"], isolated=True)["analyses"][0]["message"]


def test_mypy_runs_with_the_projects_strictness(project: Path, catalog: Catalog) -> None:
    """iniconfig's [tool.mypy] says strict: an unannotated function is an error there, not in isolation."""
    def untyped(result: dict[str, Any]) -> list[dict[str, Any]]:
        assert result["success"], result["analyses"]
        return [i for i in result["top_issues"] if i["rule"] == "no-untyped-def" and
                i["file"] == "testing/test_planted.py"]

    assert untyped(_analyze(project, catalog, ["type"]))
    assert not untyped(_analyze(project, catalog, ["type"], isolated=True))


def test_project_exclusions_apply_to_the_files_codeward_names(tmp_path: Path, catalog: Catalog) -> None:
    """ruff skips what the project excludes (--force-exclude), mypy skips its exclude regex."""
    (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nextend-exclude = ["generated"]\n\n'
                                             '[tool.mypy]\nexclude = ["^generated/"]\n')
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "stub.py").write_text("import os\nx: int = 'no'\n")
    (tmp_path / "real.py").write_text("import os\ny: int = 'no'\n")
    result = _analyze(tmp_path, catalog, ["lint", "type"])
    places = {(i["file"], i["rule"]) for i in result["top_issues"]}
    ruff = _ruff_check(tmp_path)
    assert ("real.py", 1, 8, "F401") in ruff and not [f for f, *_ in ruff if f.startswith("generated")]
    assert places == {(f, code) for f, _, _, code in ruff} | {("real.py", "assignment")}


HOSTILE_MYPY = """\
[mypy]
plugins = {plugin}
python_executable = {script}
install_types = True
non_interactive = True
cache_dir = {outside}/mypy-cache
junit_xml = {outside}/junit.xml
html_report = {outside}/html
mypy_path = {outside}
disallow_untyped_defs = True
"""
HOSTILE_PYPROJECT = """\
[tool.ruff]
fix = true
unsafe-fixes = true
cache-dir = "{outside}/ruff-cache"

[tool.ruff.lint]
select = ["F401"]

[tool.vulture]
make_whitelist = true
min_confidence = 50
"""
PLUGIN = ("import pathlib\npathlib.Path({marker!r}).write_text('plugin ran')\n\n"
          "def plugin(version):\n    raise SystemExit\n")


def _hostile_project(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "project"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    marker = outside / "code-ran"
    (root / "evil_plugin.py").write_text(PLUGIN.format(marker=str(marker)))
    script = root / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran > {marker}\n")
    script.chmod(0o755)
    (root / "mypy.ini").write_text(HOSTILE_MYPY.format(plugin=root / "evil_plugin.py", script=script,
                                                       outside=outside))
    (root / "pyproject.toml").write_text(HOSTILE_PYPROJECT.format(outside=outside))
    (root / "app.py").write_text("import os\n\n\ndef unused_function(x):\n    return x\n")
    return root, outside, marker


@pytest.mark.parametrize("privileges", ["root", "no-capabilities"])
def test_a_hostile_configuration_runs_nothing_and_writes_nothing(tmp_path: Path, privileges: str) -> None:
    """mypy plugins and python_executable would run code; ruff's fix and cache-dir would write.

    A root without capabilities cannot make the namespaces of the sandbox (mapping uid 0 needs
    CAP_SETFCAP): the review refuses, until the operator chooses plain processes — which the
    project configuration's own defences still hold for."""
    root, outside, marker = _hostile_project(tmp_path)
    prefix: list[str] = []
    command = [sys.executable, "-m", "codeward", "review", ".", "--format", "json", "-q",
               "--gates", "max_errors=off", "max_warnings=off"]
    if privileges == "no-capabilities":
        if shutil.which("setpriv") is None:
            pytest.skip("setpriv (util-linux) is not installed")
        prefix = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--"]
        refused = subprocess.run([*prefix, *command], cwd=root, capture_output=True, text=True, timeout=300)
        assert refused.returncode == 2 and "review analyzers cannot run: no isolating sandbox" in refused.stderr
        assert "apt-get install bubblewrap" in refused.stderr and not marker.exists()
        (root / "codeward.toml").write_text('[sandbox]\nbackend = "process"\n')
    before = snapshot(root)
    done = subprocess.run([*prefix, *command], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    if privileges == "no-capabilities":
        assert "NOT isolated" in done.stderr
    assert not marker.exists()
    assert list(outside.iterdir()) == []
    assert snapshot(root) == before  # `fix = true` fixed nothing, no cache or report landed in the project
    analysis = json.loads(done.stdout)["analysis"]
    runs = {run["analysis_type"]: run for run in analysis["analyses"]}
    assert all(run["status"] == "ok" for run in runs.values()), runs
    rules = {(i["file"], i["rule"]) for i in analysis["issues"]}
    assert ("app.py", "F401") in rules  # the project's ruff selection applies
    assert ("app.py", "no-untyped-def") in rules  # and its mypy strictness
    assert ("app.py", "unused-function") in rules  # vulture's output was still readable
    assert "html_report, install_types, junit_xml, non_interactive, plugins, python_executable, which" \
        in done.stderr
    assert "mypy_path, which is outside the workspace" in done.stderr


def test_a_configuration_link_leading_outside_is_not_read(tmp_path: Path, catalog: Catalog) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (tmp_path / "elsewhere.ini").write_text("[mypy]\ndisallow_untyped_defs = True\n")
    (root / "mypy.ini").symlink_to(tmp_path / "elsewhere.ini")
    (root / "app.py").write_text("def f(x):\n    return x\n")
    ctx = ToolContext(Workspace.create([root]))
    outcome = catalog.call("coding_analyze_project", {"path": ".", "analysis_types": ["type"]}, ctx)
    assert outcome.structured is not None
    assert not [i for i in outcome.structured["top_issues"] if i["rule"] == "no-untyped-def"]
    assert "mypy.ini was not read" in outcome.text


def test_what_an_analyzer_prints_passes_the_secret_redaction(tmp_path: Path, catalog: Catalog) -> None:
    """ruff quotes the line of a configuration it cannot parse; a token on that line reaches the agent
    only redacted (the logs' redaction: bearer tokens, API-key shapes, the server's secret variables)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "app.py").write_text("import os\n")
    (root / "ruff.toml").write_text('extend = "team.toml"\n')
    (root / "team.toml").write_text("auth = Bearer q8Xr2LmZ0pKd91vT\napi = sk-live-4f9Qm2ZtR8wLx7Np\n")
    outcome = catalog.call("coding_analyze_file", {"file_path": "app.py", "analysis_types": ["lint"]},
                           ToolContext(Workspace.create([root])))
    assert "ANALYSIS FAILED" in outcome.text and "team.toml" in outcome.text  # ruff's error reached the result...
    assert "q8Xr2LmZ0pKd91vT" not in outcome.text and "4f9Qm2ZtR8wLx7Np" not in outcome.text  # ...not its token
    assert "[redacted]" in outcome.text
