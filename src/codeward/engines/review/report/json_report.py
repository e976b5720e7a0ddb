"""The JSON report: the analysis, every issue and the recommendations, for machines."""

from __future__ import annotations

import json

from codeward.engines.review.models import Issue
from codeward.engines.review.report.data import ReportData


def render_json(data: ReportData, title: str, recommendations: list[str] | None) -> tuple[str, list[str]]:
    body = data.model_dump(mode="json")
    body["issues"] = [issue.model_dump(mode="json") for issue in sorted(data.all_issues(), key=Issue.sort_key)]
    document: dict[str, object] = {"title": title, "analysis": body}
    sections = ["summary", "metrics", "issues"]
    if data.gates is not None:
        sections.append("gates")
    if data.failed_analyses():
        sections.insert(0, "analyses")
    if recommendations is not None:
        document["recommendations"] = recommendations
        sections.append("recommendations")
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n", sections
