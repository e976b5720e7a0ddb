"""SARIF 2.1.0: the format code-scanning services (GitHub, GitLab, Azure DevOps) and IDEs read.

One run whose driver is codeward; each analyzer's rule is a ``reportingDescriptor`` named
``tool/rule`` (``ruff/F401``, ``bandit/B602``) with its documentation link when the analyzer
gives one. Paths are relative to the reviewed root (``%SRCROOT%``), as code scanning expects.
Analyses that could not run become error notifications of the invocation, which is then
marked unsuccessful, so a consumer never mistakes a blind run for a clean one.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from codeward.engines.review.models import Issue
from codeward.engines.review.report.data import ReportData

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
SRCROOT = "%SRCROOT%"


def rule_id(issue: Issue) -> str:
    return f"{issue.tool}/{issue.rule}"


def _rules(issues: list[Issue]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    for issue in issues:
        key = rule_id(issue)
        if key in index:
            continue
        index[key] = len(rules)
        rule: dict[str, Any] = {"id": key, "name": issue.rule,
                                "shortDescription": {"text": f"{issue.tool} {issue.rule} ({issue.category})"},
                                "defaultConfiguration": {"level": LEVELS[issue.severity]},
                                "properties": {"tool": issue.tool, "category": issue.category}}
        if issue.url:
            rule["helpUri"] = issue.url
        rules.append(rule)
    return rules, index


def _result(issue: Issue, index: dict[str, int]) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": quote(issue.file), "uriBaseId": SRCROOT}}
    if issue.line > 0:
        region: dict[str, Any] = {"startLine": issue.line}
        if issue.column > 0:
            region["startColumn"] = issue.column
        physical["region"] = region
    message = issue.message + (f"\n{issue.suggestion}" if issue.suggestion else "")
    result: dict[str, Any] = {
        "ruleId": rule_id(issue), "ruleIndex": index[rule_id(issue)], "level": LEVELS[issue.severity],
        "message": {"text": message}, "locations": [{"physicalLocation": physical}],
        "properties": {"category": issue.category, "tool": issue.tool},
    }
    if issue.also_reported_by:
        result["properties"]["alsoReportedBy"] = issue.also_reported_by
    return result


def render_sarif(data: ReportData, title: str, recommendations: list[str] | None) -> tuple[str, list[str]]:
    """The SARIF log and the report sections it carries."""
    issues = sorted(data.all_issues(), key=Issue.sort_key)
    rules, index = _rules(issues)
    failed = data.failed_analyses()
    notifications = [{"level": "error", "message": {"text": f"{run.analysis_type} analysis ({run.tool}) could not "
                                                           f"run: {run.message} {run.hint}".rstrip()},
                      "descriptor": {"id": f"{run.tool}/analysis-failed"}} for run in failed]
    invocation: dict[str, Any] = {"executionSuccessful": not failed}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "codeward", "rules": rules}},
        "originalUriBaseIds": {SRCROOT: {"description": {"text": "The root of the reviewed workspace."}}},
        "invocations": [invocation],
        "results": [_result(issue, index) for issue in issues],
        "properties": {"title": title, "path": data.path, "filesAnalyzed": data.files_analyzed,
                       "qualityScore": data.quality_score},
    }
    if data.gates is not None:
        run["properties"]["gates"] = data.gates.model_dump(mode="json")
    document = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    sections = ["analyses", "issues"] if failed else ["issues"]
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n", sections
