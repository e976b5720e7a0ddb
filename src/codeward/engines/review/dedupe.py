"""One finding, one issue: merging what several analyzers report about the same thing.

ruff's F401 and vulture both see an unused import; ruff's S rules are bandit's tests under
other names; mypy and ruff both see an undefined name. Counting each twice inflates the
totals the gates check. Findings of twin rules at the same place merge into one issue: the
one from the analyzer earliest in :data:`PRIORITY` is kept (ruff first, so codeward's lint
findings stay exactly ruff's), with the most severe severity of the group, and the others are
named in ``also_reported_by``.

Unused imports are ruff's to judge wherever ruff linted the file: it knows ``__all__``,
re-exports in ``__init__.py``, ``# noqa`` and the project's per-file ignores, which vulture
does not. So vulture's unused-import findings in such files are merged into ruff's F401 when
ruff reported one for that name, and dropped when ruff did not.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from types import MappingProxyType

from codeward.engines.review.models import SEVERITY_RANK, Issue

PRIORITY = ("ruff", "mypy", "bandit", "radon", "lizard", "vulture", "shellcheck", "cppcheck", "biome")
"""Which analyzer's wording is kept when several report one finding."""

TWINS: MappingProxyType[tuple[str, str], str] = MappingProxyType({
    ("ruff", "F841"): "unused-variable", ("vulture", "unused-variable"): "unused-variable",
    ("ruff", "F811"): "redefinition", ("mypy", "no-redef"): "redefinition",
    ("ruff", "F821"): "undefined-name", ("mypy", "name-defined"): "undefined-name",
    ("ruff", "syntax-error"): "syntax-error", ("ruff", "E999"): "syntax-error", ("mypy", "syntax"): "syntax-error",
    ("ruff", "C901"): "complexity", ("radon", "cyclomatic-complexity"): "complexity",
    ("lizard", "cyclomatic-complexity"): "complexity",
    ("mypy", "unreachable"): "unreachable", ("vulture", "unreachable-code"): "unreachable",
})
"""(analyzer, rule) pairs that name the same finding, to the name they share."""
BANDIT_TEST = re.compile(r"^B(\d{3})$")
RUFF_BANDIT = re.compile(r"^S(\d{3})$")
QUOTED_NAME = re.compile(r"[`'](?P<name>[\w.]+)[`']")


def shared_rule(issue: Issue) -> str | None:
    """The name a finding shares with its twins in other analyzers, or None when it has none."""
    twin = TWINS.get((issue.tool, issue.rule))
    if twin is not None:
        return twin
    pattern = {"bandit": BANDIT_TEST, "ruff": RUFF_BANDIT}.get(issue.tool)
    match = pattern.match(issue.rule) if pattern else None
    return f"bandit-{match[1]}" if match else None


def _priority(issue: Issue) -> int:
    return PRIORITY.index(issue.tool) if issue.tool in PRIORITY else len(PRIORITY)


def _merge(group: list[Issue]) -> Issue:
    group = sorted(group, key=_priority)
    kept = group[0]
    others = [issue.tool for issue in group[1:] if issue.tool != kept.tool]
    worst = max((issue.severity for issue in group), key=SEVERITY_RANK.__getitem__)
    if not others and worst == kept.severity:
        return kept
    return kept.model_copy(update={"severity": worst,
                                   "also_reported_by": sorted({*kept.also_reported_by, *others})})


def _imported_name(issue: Issue) -> str | None:
    match = QUOTED_NAME.search(issue.message)
    return match["name"] if match else None


def _unused_imports(issues: list[Issue], linted: Collection[str]) -> list[Issue]:
    """vulture's unused imports in files ruff linted: merged into ruff's F401, or dropped."""
    ruff_f401: dict[tuple[str, str], list[int]] = {}
    for position, issue in enumerate(issues):
        name = _imported_name(issue) if issue.tool == "ruff" and issue.rule == "F401" else None
        if name:
            ruff_f401.setdefault((issue.file, name), []).append(position)
    kept: list[Issue] = []
    merged: dict[int, list[Issue]] = {}
    for issue in issues:
        if issue.tool != "vulture" or issue.rule != "unused-import" or issue.file not in linted:
            kept.append(issue)
            continue
        name = _imported_name(issue) or ""
        candidates = ruff_f401.get((issue.file, name)) or ruff_f401.get((issue.file, name.split(".")[0])) or []
        after = [p for p in candidates if issues[p].line >= issue.line]  # vulture names the statement's first line
        if after:
            merged.setdefault(min(after, key=lambda p: issues[p].line), []).append(issue)
    if not merged:
        return kept
    by_identity = {id(issues[p]): p for p in merged}
    return [_merge([issue, *merged[by_identity[id(issue)]]]) if id(issue) in by_identity else issue
            for issue in kept]


def merge_duplicates(issues: Iterable[Issue], linted: Collection[str] = ()) -> list[Issue]:
    """``issues`` with each finding reported once; ``linted`` are the files ruff linted (display paths)."""
    ordered = _unused_imports(list(issues), linted)
    groups: dict[tuple[str, int, str], list[Issue]] = {}
    result: list[Issue | tuple[str, int, str]] = []
    for issue in ordered:
        shared = shared_rule(issue)
        if shared is None:
            result.append(issue)
            continue
        key = (issue.file, issue.line, shared)
        if key not in groups:
            groups[key] = []
            result.append(key)
        groups[key].append(issue)
    merged: list[Issue] = []
    for item in result:
        if isinstance(item, Issue):
            merged.append(item)
            continue
        group = groups[item]
        tools = [issue.tool for issue in group]
        if len(set(tools)) == len(tools):
            merged.append(_merge(group))
        else:  # one analyzer reported several things there (two unused names on one line): keep them apart
            merged.extend(group)
    return merged
