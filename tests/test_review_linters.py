"""Linters for shell, C/C++ and JavaScript/TypeScript: real shellcheck, cppcheck and Biome.

Each is optional (not a Python package): a review without it says so, with how to install
it, and goes on without failing the gates. With it, codeward's findings are the linter's own
(compared with the linter run directly), and the project's .shellcheckrc and biome.json apply
unless the review is isolated.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from codeward.config import ReviewSettings
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.workspace import Workspace
from tests.conftest import node_tool

SCRIPT = '#!/bin/sh\necho $1\nfor f in $(ls *.txt); do echo "$f"; done\n'
C_SOURCE = "int main(void) {\n  int a[3];\n  a[3] = 1;\n  char *p = 0;\n  return *p + a[0];\n}\n"
JS_SOURCE = 'var a = 1;\nif (a == "1") { debugger; }\nexport function f(x) { return x; }\n'

needs_shellcheck = pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
needs_cppcheck = pytest.mark.skipif(shutil.which("cppcheck") is None, reason="cppcheck is not installed")
BIOME = node_tool("biome")
needs_biome = pytest.mark.skipif(BIOME is None, reason="Biome is not installed (tests/node)")


def _lint(root: Path, catalog: Catalog, path: str = ".", **config: Any) -> dict[str, Any]:
    ctx = ToolContext(Workspace.create([root]))
    ctx.services = ctx.services.with_values(ReviewSettings(**config))
    outcome = catalog.call("coding_analyze_project", {"path": path, "analysis_types": ["lint"]}, ctx)
    assert outcome.structured is not None, outcome.text
    return outcome.structured


def _found(result: dict[str, Any], tool: str) -> set[tuple[str, int, int, str]]:
    return {(i["file"], i["line"], i["column"], i["rule"]) for i in result["top_issues"] if i["tool"] == tool}


@needs_shellcheck
def test_shell_scripts_get_shellchecks_findings(root: Path, catalog: Catalog) -> None:
    (root / "deploy.sh").write_text(SCRIPT)
    direct = json.loads(subprocess.run(["shellcheck", "--format=json1", "deploy.sh"], cwd=root,
                                       capture_output=True, text=True, timeout=60).stdout)["comments"]
    expected = {("deploy.sh", c["line"], c["column"], f"SC{c['code']}") for c in direct}
    assert ("deploy.sh", 3, 10, "SC2045") in expected
    result = _lint(root, catalog)
    assert _found(result, "shellcheck") == expected
    issue = next(i for i in result["top_issues"] if i["rule"] == "SC2045")
    assert issue["severity"] == "error" and issue["url"] == "https://www.shellcheck.net/wiki/SC2045"


@needs_shellcheck
def test_the_projects_shellcheckrc_applies_unless_isolated(root: Path, catalog: Catalog) -> None:
    (root / "deploy.sh").write_text(SCRIPT)
    (root / ".shellcheckrc").write_text("disable=SC2086\n")
    assert not [r for *_, r in _found(_lint(root, catalog), "shellcheck") if r == "SC2086"]
    assert [r for *_, r in _found(_lint(root, catalog, isolated=True), "shellcheck") if r == "SC2086"]


@needs_cppcheck
def test_c_sources_get_cppchecks_bugs(root: Path, catalog: Catalog) -> None:
    (root / "main.c").write_text(C_SOURCE)
    found = {(i["rule"], i["line"], i["severity"]) for i in _lint(root, catalog)["top_issues"]
             if i["tool"] == "cppcheck"}
    assert ("arrayIndexOutOfBounds", 3, "error") in found
    assert ("nullPointer", 5, "error") in found


@needs_biome
def test_javascript_gets_biomes_findings_and_its_configuration(root: Path, catalog: Catalog) -> None:
    (root / "app.js").write_text(JS_SOURCE)
    result = _lint(root, catalog, executables={"biome": BIOME})
    found = {(r, line, col) for _, line, col, r in _found(result, "biome")}
    assert ("lint/suspicious/noDebugger", 2, 17) in found
    assert ("lint/suspicious/noDoubleEquals", 2, 7) in found
    issue = next(i for i in result["top_issues"] if i["rule"] == "lint/suspicious/noDebugger")
    assert issue["url"] == "https://biomejs.dev/linter/rules/no-debugger/"
    (root / "biome.json").write_text(json.dumps({"linter": {"rules": {"suspicious": {"noDebugger": "off"}}}}))
    configured = {r for *_, r in _found(_lint(root, catalog, executables={"biome": BIOME}), "biome")}
    assert "lint/suspicious/noDebugger" not in configured and "lint/suspicious/noDoubleEquals" in configured
    isolated = {r for *_, r in _found(_lint(root, catalog, executables={"biome": BIOME}, isolated=True), "biome")}
    assert "lint/suspicious/noDebugger" in isolated


def test_a_missing_optional_linter_is_reported_and_does_not_fail_the_gates(root: Path, catalog: Catalog) -> None:
    """Biome is not on PATH here (the tests install it under tests/node): the review says so and goes on."""
    if shutil.which("biome"):
        pytest.skip("biome is on PATH here")
    (root / "app.js").write_text("export const a = 1;\n")
    ctx = ToolContext(Workspace.create([root]))
    outcome = catalog.call("coding_check_quality_gates", {"path": "."}, ctx)
    report = outcome.structured
    assert report is not None and report["overall_status"] == "pass", outcome.text
    analysis = _lint(root, catalog)
    [biome] = [run for run in analysis["analyses"] if run["tool"] == "biome"]
    assert biome["status"] == "skipped"
    assert "biome is not installed" in biome["message"] and "npm install --global @biomejs/biome" in biome["message"]
    asked = catalog.call("coding_analyze_file", {"file_path": "app.js", "analysis_types": ["lint"]}, ctx)
    assert asked.is_error and [e.kind.value for e in asked.errors] == ["unavailable"]
    assert "biome is not installed" in asked.text and "npm install --global @biomejs/biome" in asked.text
