"""Machine formats of ``codeward review``: SARIF 2.1.0 (checked against the OASIS schema), GitHub
workflow annotations and the concise one-line text, each carrying every finding and failure."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import jsonschema
import pytest

from codeward.apps.cli.review import EXIT_VIOLATION, run_review_cli
from codeward.config import ReviewSettings
from codeward.kernel.catalog import Catalog
from tests.conftest import REPO
from tests.review_fixtures import caller, planted_project

SCHEMA = json.loads((REPO / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text())
ANNOTATION = re.compile(r"^::(?P<level>error|warning|notice) (?P<props>[^:]*)::(?P<message>.*)$")


def _validate(document: dict[str, Any]) -> None:
    validator = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = planted_project(tmp_path_factory, "formats")
    (root / "app" / "odd, name: x.py").write_text("import os\n")
    return root


def _review(root: Path, fmt: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeward", "review", "app", "--format", fmt, "-q", *extra],
                          cwd=root, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def reference(project: Path) -> dict[str, Any]:
    """The same review as JSON: what the other formats must carry."""
    done = _review(project, "json")
    return dict(json.loads(done.stdout)["analysis"])


def test_sarif_is_valid_and_carries_every_issue(project: Path, reference: dict[str, Any]) -> None:
    done = _review(project, "sarif")
    assert done.returncode == EXIT_VIOLATION
    document = json.loads(done.stdout)
    _validate(document)
    run = document["runs"][0]
    assert document["version"] == "2.1.0" and run["tool"]["driver"]["name"] == "codeward"
    assert run["invocations"] == [{"executionSuccessful": True}]
    results = run["results"]
    assert len(results) == reference["total_issues"] > 5
    rules = run["tool"]["driver"]["rules"]
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    expected = {(i["file"], i["line"], f"{i['tool']}/{i['rule']}") for i in reference["issues"]}
    found = {(unquote(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]),
              r["locations"][0]["physicalLocation"].get("region", {}).get("startLine", 0), r["ruleId"])
             for r in results}
    assert found == expected
    levels = {r["ruleId"]: r["level"] for r in results}
    assert levels["mypy/arg-type"] == "error" and levels["ruff/F401"] == "warning"
    assert any(rule.get("helpUri", "").startswith("https://docs.astral.sh/ruff/") for rule in rules)
    assert run["properties"]["gates"]["overall_status"] == "fail"


def test_sarif_marks_a_run_with_a_failed_analysis_unsuccessful(project: Path) -> None:
    out = io.StringIO()
    config = ReviewSettings(executables={"bandit": str(project / "no-bandit")})
    status = run_review_cli("app", "sarif", None, None, config=config, root=project, stdout=out,
                            stderr=io.StringIO(), progress=False)
    assert status == EXIT_VIOLATION
    document = json.loads(out.getvalue())
    _validate(document)
    invocation = document["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [notice] = invocation["toolExecutionNotifications"]
    assert notice["level"] == "error" and "security analysis (bandit) could not run" in notice["message"]["text"]


def test_the_sarif_report_tool_writes_a_valid_log(project: Path, reference: dict[str, Any],
                                                  catalog: Catalog) -> None:
    call = caller(project, catalog)
    written = call("coding_generate_report", analysis_results=reference, output_path="out/review.sarif",
                   format="sarif")
    assert not written.is_error, written.text
    _validate(json.loads((project / "out" / "review.sarif").read_text()))


def test_github_annotations_name_each_place_escaped(project: Path, reference: dict[str, Any]) -> None:
    done = _review(project, "github")
    lines = done.stdout.splitlines()
    parsed = [ANNOTATION.match(line) for line in lines]
    assert all(parsed), [line for line, match in zip(lines, parsed, strict=True) if not match][:3]
    issues = [m for m in parsed if m and "file=" in m["props"]]
    assert len(issues) == reference["total_issues"]
    odd = [m for m in issues if "odd" in m["props"]]
    assert odd and odd[0]["props"].startswith("file=app/odd%2C name%3A x.py,line=1,col=8,title=ruff F401")
    assert all("\n" not in m["message"] for m in issues)
    assert "%0A" in issues[0]["message"]  # the suggestion follows the message on its own line
    gates = [m for m in parsed if m and "quality gate max_errors failed" in m["props"]]
    assert gates and gates[0]["level"] == "error"


def test_text_is_one_line_per_finding_like_ruff(project: Path, reference: dict[str, Any]) -> None:
    done = _review(project, "text")
    lines = done.stdout.splitlines()
    assert lines[-1].startswith(f"Found {reference['total_issues']} issues")
    assert len(lines) == reference["total_issues"] + 1
    assert "app/odd, name: x.py:1:8: F401 [ruff] warning: `os` imported but unused (also vulture)" in lines
