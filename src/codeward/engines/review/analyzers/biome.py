"""JavaScript and TypeScript with Biome's linter, one run over all files.

Biome is read through its ``github`` reporter: GitHub's workflow-command lines
(``::error title=lint/suspicious/noDebugger,file=...,line=2,col=17::message``), a stable
format, unlike its JSON reporter, which Biome calls experimental. The project's
``biome.json``/``biome.jsonc`` applies unless the review is isolated (then Biome's
recommended rules). Rules are shown as Biome names them (``lint/suspicious/noDebugger``)
and link to their documentation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codeward.engines.review.analyzers.base import FileIndex, Findings, SourceFile, ToolRunner, paths
from codeward.engines.review.models import Issue, Severity

LINE = re.compile(r"^::(?P<level>error|warning|notice|info|debug) (?P<props>[^:]*)::(?P<message>.*)$")
SEVERITY: dict[str, Severity] = {"error": "error", "warning": "warning", "notice": "info", "info": "info",
                                 "debug": "info"}
CLEAN, FOUND = 0, 1


def _unescape(text: str) -> str:
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def analyze(files: Sequence[SourceFile], runner: ToolRunner) -> Findings:
    config: list[str] = []
    source_config = runner.project.biome_source
    if not runner.config.isolated and source_config is not None:
        config = [f"--config-path={source_config}"]
    completed = runner.run("biome", ["lint", "--reporter=github", "--colors=off", "--max-diagnostics=none",
                                     "--no-errors-on-unmatched", *config, *paths(files)],
                           ok_exit_codes=(CLEAN, FOUND))
    index = FileIndex(files, runner.workdir)
    issues = []
    for line in completed.stdout.splitlines():
        match = LINE.match(line.strip())
        if not match:
            continue
        props = dict(part.split("=", 1) for part in match["props"].split(",") if "=" in part)
        source = index.lookup(_unescape(props.get("file", "")))
        if source is None:
            continue
        rule = _unescape(props.get("title", "biome"))
        name = rule.rsplit("/", 1)[-1]
        url = f"https://biomejs.dev/linter/rules/{_kebab(name)}/" if rule.startswith("lint/") else None
        issues.append(Issue(
            file=source.display, severity=SEVERITY[match["level"]], line=int(props.get("line") or 0),
            column=int(props.get("col") or 0), message=_unescape(match["message"]), rule=rule, category="lint",
            suggestion=f"See {url}" if url else "See Biome's documentation of this diagnostic.",
            tool="biome", url=url,
        ))
    return Findings(issues=issues)
