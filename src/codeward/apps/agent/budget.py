"""The catalog the model is offered, chosen to fit its context window.

Every tool schema is sent with every request: codeward's whole catalog costs thousands of tokens,
a large part of a small local model's context. Before each message the session plans what to offer:

- **full** — every tool, when the schemas fit with room left for the conversation;
- **trimmed** — the core (``core`` on a lean stack, else the ``files`` toolset) plus the toolsets
  relevant to the message (words of the message and the tracked files' names matched against
  tool names and descriptions, rarer words counting more), as many as fit;
- **meta** — the four registry meta-tools, which search, describe and call every other tool
  (see :mod:`codeward.tools.meta`), when not even a trimmed catalog fits.

``--meta`` and ``--toolsets`` choose by hand. Token counts are estimates (JSON schemas at about
3.5 characters a token, measured against Qwen's tokenizer at 3.1–4.1; prose at 4): cheap,
a little pessimistic, never sent to a tokenizer.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codeward.engines.llm.window import ContextWindow
from codeward.kernel.surface import ToolInfo

SCHEMA_CHARS_PER_TOKEN = 3.5
PER_TOOL_TOKENS = 8
LEAN_CORE = "core"
"""The group of a lean stack's core tools (the discovery tools among them): what a trimmed offer keeps."""
CORE_TOOLSET = "files"
"""What a trimmed offer keeps on a stack that lists everything (no core group)."""
MIN_CONVERSATION_ROOM = 1024
GATEWAY_SEPARATOR = "__"
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset({"a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
                   "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "please", "show", "tell", "that",
                   "the", "then", "this", "to", "use", "using", "was", "what", "when", "where", "which", "who",
                   "why", "with", "you", "your"})
_EXTENSIONS = {"c": "cpp", "h": "cpp", "cc": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp", "pyi": "py"}
"""File extensions that name a toolset's prefix (``main.c`` points at the ``ts_cpp_*`` tools)."""
NAME_WEIGHT = 2.0
DESCRIPTION_WEIGHT = 0.5
RELEVANT = 1.0


def openai_tool(info: ToolInfo) -> dict[str, Any]:
    """One entry of a request's ``tools`` array."""
    return {"type": "function", "function": {"name": info.name, "description": info.description,
                                             "parameters": info.input_schema}}


def schema_tokens(infos: Iterable[ToolInfo]) -> int:
    """Estimated tokens the schemas of ``infos`` take in a request."""
    listed = list(infos)
    if not listed:
        return 0
    chars = len(json.dumps([openai_tool(i) for i in listed], ensure_ascii=False))
    return math.ceil(chars / SCHEMA_CHARS_PER_TOKEN) + PER_TOOL_TOKENS * len(listed)


def conversation_room(window_tokens: int) -> int:
    """Tokens kept free for the conversation to grow in (tool results, answers): a quarter of the window."""
    return max(MIN_CONVERSATION_ROOM, window_tokens // 4)


@dataclass(frozen=True)
class ToolGroup:
    """The tools of one toolset (or one gateway server), with their schemas' estimated size."""

    name: str
    infos: tuple[ToolInfo, ...]
    tokens: int


def group_tools(infos: Iterable[ToolInfo], toolset_of: Callable[[str], str | None]) -> list[ToolGroup]:
    """Native tools by toolset, gateway tools (``alias__tool``) by server alias, in first-seen order."""
    grouped: dict[str, list[ToolInfo]] = {}
    for info in infos:
        toolset = toolset_of(info.name)
        if toolset is None:
            toolset = info.name.split(GATEWAY_SEPARATOR, 1)[0] if GATEWAY_SEPARATOR in info.name else "other"
        grouped.setdefault(toolset, []).append(info)
    return [ToolGroup(name, tuple(members), schema_tokens(members)) for name, members in grouped.items()]


def relevance(text: str, groups: Sequence[ToolGroup], core: str | None = None) -> dict[str, float]:
    """How strongly ``text`` points at each group: its words found in the group's tool names
    (2 points) or descriptions (half a point), each divided by how many groups use that word.
    A group scoring :data:`RELEVANT` or more is worth offering.

    A word that names one of the ``core`` group's tools is mostly the core's to answer: it gives the
    other groups half its points, so it does not bring a group in on its own. "read notes.txt"
    wants ``read_file``, not ``process_read`` and the other process tools (seven schemas, a quarter
    more prompt for a small local model to read before it answers)."""
    found = _WORD.findall(text.lower())
    asked = {_EXTENSIONS.get(w, w) for w in found if w not in _STOP and (len(w) > 1 or w in _EXTENSIONS)}
    vocab: dict[str, dict[str, float]] = {}
    for group in groups:
        words: dict[str, float] = {}
        for info in group.infos:
            for word in _WORD.findall(info.description.lower()):
                words.setdefault(word, DESCRIPTION_WEIGHT)
            for word in _WORD.findall(info.name.lower()):
                words[word] = NAME_WEIGHT
        vocab[group.name] = words
    cores = vocab.get(core or "", {})
    share = {w: 0.5 if _match(w, cores) >= NAME_WEIGHT else 1.0 for w in asked}
    spread = {w: sum(1 for words in vocab.values() if _match(w, words)) for w in asked}
    return {name: sum(_match(w, words) / spread[w] * (1.0 if name == core else share[w]) for w in asked if spread[w])
            for name, words in vocab.items()}


def _match(word: str, words: Mapping[str, float]) -> float:
    if word in words:
        return words[word]
    if len(word) >= 5:  # "reading" finds "read", "definitions" finds "definition"
        return max((weight for known, weight in words.items() if len(known) >= 4
                    and (word.startswith(known) or known.startswith(word))), default=0.0)
    return 0.0


@dataclass(frozen=True)
class CatalogChoice:
    """How the catalog is chosen: by the budget (the default), or by hand."""

    meta: bool = False
    toolsets: tuple[str, ...] | None = None


@dataclass(frozen=True)
class CatalogPlan:
    """What a request offers, and why."""

    form: str
    """"full", "trimmed" or "meta"."""
    toolsets: tuple[str, ...]
    """The groups offered (for meta: the four meta-tools reach all of them)."""
    tool_count: int
    schema_tokens: int
    window: ContextWindow
    reason: str

    def summary(self) -> str:
        what = {"full": "full catalog", "meta": "meta mode (search, describe and call every tool)",
                "trimmed": f"trimmed to {', '.join(self.toolsets)}"}[self.form]
        return f"{what}: {self.tool_count} tools, ~{self.schema_tokens:,} tokens — {self.reason}"


def plan_catalog(groups: Sequence[ToolGroup], meta_tokens: int, window: ContextWindow, used_tokens: int,
                 reply_tokens: int, text: str = "", *, meta: bool = False,
                 toolsets: Sequence[str] | None = None) -> CatalogPlan:
    """Choose full, trimmed or meta for a request whose conversation takes ``used_tokens``.

    ``reply_tokens`` (the request's ``max_tokens``) and :func:`conversation_room` are kept free.
    """
    total = sum(g.tokens for g in groups)
    count = sum(len(g.infos) for g in groups)
    names = tuple(g.name for g in groups)
    context = f"{window.tokens:,}-token context ({window.source})"
    if meta:
        return CatalogPlan("meta", names, 4, meta_tokens, window, "chosen with --meta")
    if toolsets is not None:
        chosen = [g for g in groups if g.name in set(toolsets)]
        return CatalogPlan("trimmed", tuple(g.name for g in chosen), sum(len(g.infos) for g in chosen),
                           sum(g.tokens for g in chosen), window, "chosen with --toolsets")
    room = window.tokens - reply_tokens - used_tokens - conversation_room(window.tokens)
    if total <= room:
        return CatalogPlan("full", names, count, total, window, f"fits the {context}")
    core = LEAN_CORE if any(g.name == LEAN_CORE for g in groups) else CORE_TOOLSET
    scores = relevance(text, groups, core)
    wanted = sorted((g for g in groups if g.name == core or scores.get(g.name, 0.0) >= RELEVANT),
                    key=lambda g: (g.name != core, -scores.get(g.name, 0.0), g.name))
    picked: list[ToolGroup] = []
    for group in wanted:
        if sum(g.tokens for g in picked) + group.tokens <= room:
            picked.append(group)
    if picked and all(g in picked for g in wanted if g.name == core):  # never without the core
        tokens = sum(g.tokens for g in picked)
        return CatalogPlan("trimmed", tuple(g.name for g in picked), sum(len(g.infos) for g in picked), tokens,
                           window, f"all {count} tools (~{total:,} tokens) do not fit the {context} with room "
                           "for the conversation; --toolsets or --meta choose by hand")
    fits = "" if meta_tokens <= room else "; even these may not fit: start a new conversation or :drop files"
    return CatalogPlan("meta", names, 4, meta_tokens, window,
                       f"not even the core tools fit the {context} with room for the conversation{fits}")
