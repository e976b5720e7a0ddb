"""coding_generate_report (HTML with charts, Markdown, JSON) and the HTML page in headless Chromium."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from codeward.kernel.catalog import Catalog
from tests.conftest import REPO, snapshot
from tests.review_fixtures import Call, caller, planted_project

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture(scope="module")
def planted_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return planted_project(tmp_path_factory, "report")


@pytest.fixture(scope="module")
def module_call(planted_root: Path, catalog: Catalog) -> Call:
    return caller(planted_root, catalog)


@pytest.fixture(scope="module")
def analysis(module_call: Call) -> dict[str, Any]:
    outcome = module_call("coding_analyze_project", path="app", output_path="reports/full.html",
                          report_format="html")
    assert not outcome.is_error, outcome.text
    assert outcome.structured is not None
    return outcome.structured


def test_analyze_project_saves_its_report(planted_root: Path, analysis: dict[str, Any]) -> None:
    assert analysis["output_path"] == "reports/full.html"
    page = (planted_root / "reports" / "full.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    # the saved report lists every issue, not only the top 20 of the tool result
    assert page.count('<span class="sev ') == analysis["total_issues"]


@pytest.mark.parametrize("fmt", ["html", "markdown", "json"])
def test_each_format_is_written_and_repeatable(planted_root: Path, module_call: Call, analysis: dict[str, Any],
                                               fmt: str) -> None:
    target = planted_root / "reports" / f"q.{fmt}"
    outcome = module_call("coding_generate_report", analysis_results=analysis, output_path=f"reports/q.{fmt}",
                          format=fmt, title="Weekly <Quality>")
    assert not outcome.is_error, outcome.text
    result = outcome.structured
    assert result is not None and result["success"] is True and result["format"] == fmt
    assert result["output_path"] == f"reports/q.{fmt}"
    first = target.read_bytes()
    assert result["size_bytes"] == len(first)
    assert {"summary", "issues", "metrics", "recommendations"} <= set(result["sections_included"])
    module_call("coding_generate_report", analysis_results=analysis, output_path=f"reports/q.{fmt}", format=fmt,
                title="Weekly <Quality>")
    assert target.read_bytes() == first  # identical inputs, identical report
    text = first.decode()
    if fmt == "html":
        assert "Weekly &lt;Quality&gt;" in text
        assert "<script" not in text and 'src="http' not in text and 'href="http' not in text
        assert text.count('class="chart"') == 4 and "charts" in result["sections_included"]
    elif fmt == "markdown":
        assert text.startswith("# Weekly <Quality>") and "## Recommendations" in text
        assert "| error |" in text
    else:
        document = json.loads(text)
        assert document["title"] == "Weekly <Quality>"
        assert document["analysis"]["total_issues"] == analysis["total_issues"]
        assert len(document["analysis"]["issues"]) == len(analysis["top_issues"])
        assert document["recommendations"]


def test_options_drop_charts_and_recommendations(planted_root: Path, module_call: Call,
                                                 analysis: dict[str, Any]) -> None:
    result = module_call("coding_generate_report", analysis_results=analysis, output_path="reports/plain.html",
                         include_charts=False, include_recommendations=False).structured
    assert result is not None
    assert "charts" not in result["sections_included"] and "recommendations" not in result["sections_included"]
    page = (planted_root / "reports" / "plain.html").read_text()
    assert "<svg" not in page and "Recommendations" not in page


def test_recommendations_follow_the_findings(planted_root: Path, module_call: Call,
                                            analysis: dict[str, Any]) -> None:
    module_call("coding_generate_report", analysis_results=analysis, output_path="reports/advice.md",
                format="markdown")
    advice = (planted_root / "reports" / "advice.md").read_text().split("## Recommendations", 1)[1]
    assert "error-level" in advice and "security" in advice and "Refactor" in advice and "unused code" in advice


def test_report_from_a_file_analysis_and_from_a_summary(planted_root: Path, module_call: Call) -> None:
    file_result = module_call("coding_analyze_file", file_path="app/pkg/core.py").structured
    assert file_result is not None
    out = module_call("coding_generate_report", analysis_results=file_result, output_path="reports/file.md",
                      format="markdown")
    assert not out.is_error, out.text
    text = (planted_root / "reports" / "file.md").read_text()
    assert "`app/pkg/core.py`" in text and "B602" in text
    summary = {"files_analyzed": 42, "total_issues": 23, "quality_score": 85.5}
    out = module_call("coding_generate_report", analysis_results=summary, output_path="reports/summary.html")
    assert not out.is_error, out.text
    assert "85.5" in (planted_root / "reports" / "summary.html").read_text()


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"analysis_results": {}}, "none of the fields"),
        ({"analysis_results": {"colour": "blue"}}, "none of the fields"),
        ({"analysis_results": {"total_issues": "many"}}, "total_issues"),
        ({"analysis_results": {"top_issues": [{"severity": "fatal"}]}}, "top_issues.0"),
        ({"analysis_results": "files: 3"}, "analysis_results"),
        ({"analysis_results": {"total_issues": 1}, "output_path": "../r.html"}, "outside the workspace"),
        ({"analysis_results": {"total_issues": 1}, "output_path": "src"}, "is a directory"),
        ({"analysis_results": {"total_issues": 1}, "output_path": "config.toml"}, "protected file"),
        ({"analysis_results": {"total_issues": 1}, "format": "pdf"}, "format"),
    ],
)
def test_bad_report_input_is_a_clear_error_and_writes_nothing(root: Path, call: Call, arguments: dict[str, Any],
                                                              expected: str) -> None:
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x = 1\n")
    before = snapshot(root.parent)
    outcome = call("coding_generate_report", **{"output_path": "r.html", **arguments})
    assert outcome.is_error
    assert expected in outcome.text
    assert snapshot(root.parent) == before


def _chromium_available() -> bool:
    return Path(CHROMIUM).exists()


@pytest.mark.skipif(not _chromium_available(), reason="needs Debian's chromium (scripts/test installs it)")
def test_html_report_renders_its_charts_in_chromium(planted_root: Path, analysis: dict[str, Any]) -> None:
    from playwright.sync_api import sync_playwright

    page_path = planted_root / "reports" / "full.html"
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "review-report.png"
    requests: list[str] = []
    with tempfile.TemporaryDirectory(prefix="codeward-chromium-") as profile, sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1100, "height": 900})
        try:
            page = browser.new_page()
            page.on("request", lambda request: requests.append(request.url))
            page.goto(page_path.as_uri())
            page.screenshot(path=str(screenshot), full_page=True)
            charts = page.eval_on_selector_all(
                "svg.chart", "nodes => nodes.map(n => n.dataset.chart)")
            bars = page.eval_on_selector_all(
                "svg.chart rect.bar",
                """nodes => nodes.map(n => {
                    const box = n.getBoundingClientRect();
                    return {chart: n.closest('svg').dataset.chart, label: n.dataset.label,
                            row: n.dataset.row || null, value: Number(n.dataset.value),
                            width: box.width, height: box.height};
                })""")
        finally:
            browser.close()
    assert requests == [page_path.as_uri()]  # nothing fetched besides the page itself
    assert charts == ["issues-by-severity", "complexity-distribution", "issues-by-category", "worst-files"]
    assert screenshot.stat().st_size > 10_000

    def values(chart: str) -> dict[str, float]:
        return {b["label"]: b["value"] for b in bars if b["chart"] == chart}

    assert values("issues-by-severity") == {k: float(v) for k, v in analysis["issue_summary"].items()}
    assert values("complexity-distribution") == {k: float(v) for k, v in analysis["complexity_distribution"].items()}
    assert sum(values("issues-by-category").values()) == analysis["total_issues"]
    worst_rows = [b["row"] for b in bars if b["chart"] == "worst-files"]
    assert worst_rows[0] == "app/pkg/core.py" and "app/web/branchy.js" in worst_rows
    drawn = [b for b in bars if b["value"] > 0]
    assert drawn and all(b["width"] > 1 and b["height"] > 1 for b in drawn)  # really painted, not just in the DOM
    # bar heights follow the data: the tallest severity bar belongs to the largest count
    severity = [b for b in bars if b["chart"] == "issues-by-severity"]
    assert max(severity, key=lambda b: b["height"])["value"] == max(b["value"] for b in severity)
