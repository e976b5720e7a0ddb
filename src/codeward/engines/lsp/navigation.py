"""The questions codeward asks a ready language server, and its answers as codeward shows them.

A :class:`Session` is one call's conversation with a server: it first brings the server up to
date with the disk (:meth:`~codeward.engines.lsp.pool.Server.sync`), then asks — definition, references,
rename, hover, diagnostics — and turns the answers into :class:`Place` (1-based lines and
code-point columns, absolute paths) and, for a rename, the edits per file. Files are read through
the caller's gated reader only; a place in a file it may not read (a library outside the roots)
keeps the server's column.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeward.engines.lsp.client import LspError
from codeward.engines.lsp.pool import FileStates, Reader, Server
from codeward.engines.lsp.positions import Span, TextEdit, lines_of, position, span_of

DIAGNOSTIC_SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


@dataclass(frozen=True, order=True)
class Place:
    """A range in a file: 1-based lines and columns (code points), end exclusive."""

    path: Path
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Diagnostic:
    place: Place
    severity: str
    message: str
    code: str = ""
    source: str = ""


@dataclass
class RenamePlan:
    """What a server's rename would change: text edits per file, and what it would do to files themselves."""

    edits: dict[Path, list[TextEdit]] = field(default_factory=dict)
    file_operations: list[str] = field(default_factory=list)
    """Creates, renames or deletes of whole files the server asked for (codeward refuses those)."""
    outside: list[str] = field(default_factory=list)
    """URIs the edit names that are not files (``untitled:``, remote schemes)."""


def path_of(uri: str) -> Path | None:
    """The file a ``file://`` URI names (None for any other scheme)."""
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme != "file":
        return None
    return Path(urllib.parse.unquote(parsed.path))


class Session:
    """One call's questions to a ready server (see the module docstring)."""

    def __init__(self, server: Server, read: Reader, states: FileStates, files: Iterable[Path]) -> None:
        self.server = server
        self.read = read
        self._lines: dict[Path, list[str] | None] = {}
        server.sync(states, read, list(files) if server.spec.open_to_ask else [])

    @property
    def encoding(self) -> Any:
        client = self.server.client
        assert client is not None
        return client.encoding

    def lines(self, path: Path) -> list[str] | None:
        if path not in self._lines:
            text = self.read(path)
            self._lines[path] = lines_of(text) if text is not None else None
        return self._lines[path]

    def _at(self, path: Path, line: int, column: int) -> dict[str, Any]:
        """``textDocument`` and ``position`` of 1-based ``line``/``column`` in ``path``."""
        lines = self.lines(path) or []
        return {"textDocument": {"uri": path.as_uri()},
                "position": position(line - 1, column - 1, lines, self.encoding)}

    def place(self, uri: str, raw_range: Mapping[str, Any]) -> Place | None:
        path = path_of(uri)
        if path is None:
            return None
        lines = self.lines(path)
        if lines is None:  # unreadable here: the server's own count, taken as characters
            start, end = raw_range.get("start", {}), raw_range.get("end", {})
            return Place(path, int(start.get("line", 0)) + 1, int(start.get("character", 0)) + 1,
                         int(end.get("line", 0)) + 1, int(end.get("character", 0)) + 1)
        span = span_of(raw_range, lines, self.encoding)
        return Place(path, span.start_line + 1, span.start_column + 1, span.end_line + 1, span.end_column + 1)

    def _places(self, answer: Any) -> list[Place]:
        """Locations or location links, one or many, as places (sorted, without repeats)."""
        items = answer if isinstance(answer, list) else [answer] if isinstance(answer, dict) else []
        found: set[Place] = set()
        for item in items:
            if not isinstance(item, dict):
                continue
            if "targetUri" in item:
                place = self.place(str(item["targetUri"]), item.get("targetSelectionRange") or item["targetRange"])
            elif "uri" in item and "range" in item:
                place = self.place(str(item["uri"]), item["range"])
            else:
                continue
            if place is not None:
                found.add(place)
        return sorted(found)

    # -- the questions --------------------------------------------------------------------

    def definition(self, path: Path, line: int, column: int) -> list[Place]:
        return self._places(self.server.request("textDocument/definition", self._at(path, line, column)))

    def definitions(self, spots: list[tuple[Path, int, int]]) -> list[list[Place] | None]:
        """The definition of each (path, 1-based line, column), asked all at once; None where the server failed."""
        client = self.server.client
        assert client is not None
        answers = client.request_all("textDocument/definition", [self._at(*spot) for spot in spots],
                                     self.server.settings.request_timeout_s)
        return [None if isinstance(answer, LspError) else self._places(answer) for answer in answers]

    def references(self, path: Path, line: int, column: int, include_declaration: bool = True) -> list[Place]:
        params = {**self._at(path, line, column), "context": {"includeDeclaration": include_declaration}}
        return self._places(self.server.request("textDocument/references", params))

    def hover(self, path: Path, line: int, column: int) -> str:
        answer = self.server.request("textDocument/hover", self._at(path, line, column))
        return hover_text(answer.get("contents") if isinstance(answer, dict) else None)

    def prepare_rename(self, path: Path, line: int, column: int) -> str | None:
        """Why the server will not rename the name there (None: it will, or it cannot tell beforehand)."""
        provider = self.server.client.capabilities.get("renameProvider") if self.server.client else None
        if not (isinstance(provider, dict) and provider.get("prepareProvider")):
            return None
        try:
            answer = self.server.request("textDocument/prepareRename", self._at(path, line, column))
        except LspError as exc:
            return str(exc)
        return None if answer else "the server says the name there cannot be renamed"

    def rename(self, path: Path, line: int, column: int, new_name: str) -> RenamePlan:
        params = {**self._at(path, line, column), "newName": new_name}
        answer = self.server.request("textDocument/rename", params)
        return self._plan(answer if isinstance(answer, dict) else {})

    def _plan(self, edit: Mapping[str, Any]) -> RenamePlan:
        plan = RenamePlan()
        raw: list[tuple[str, list[Any]]] = []
        changes = edit.get("changes")
        if isinstance(changes, dict):
            raw += [(str(uri), list(edits)) for uri, edits in changes.items() if isinstance(edits, list)]
        for change in edit.get("documentChanges") or []:
            if not isinstance(change, dict):
                continue
            kind = change.get("kind")
            if kind in ("create", "rename", "delete"):
                target = change.get("uri") or f"{change.get('oldUri')} -> {change.get('newUri')}"
                plan.file_operations.append(f"{kind} {target}")
                continue
            document = change.get("textDocument")
            if isinstance(document, dict) and isinstance(change.get("edits"), list):
                raw.append((str(document.get("uri")), list(change["edits"])))
        for uri, edits in raw:
            target = path_of(uri)
            if target is None:
                plan.outside.append(uri)
                continue
            lines = self.lines(target) or []
            converted = plan.edits.setdefault(target, [])
            for item in edits:
                if isinstance(item, dict) and "range" in item:
                    span: Span = span_of(item["range"], lines, self.encoding)
                    converted.append(TextEdit(span, str(item.get("newText", ""))))
        return plan

    def diagnostics(self, path: Path) -> list[Diagnostic]:
        """The server's diagnostics of one file: pulled where the server offers that, else the last it
        published after the file's current text reached it."""
        client = self.server.client
        assert client is not None
        self.server.sync({}, self.read, [path])  # diagnostics come for open files
        if client.capabilities.get("diagnosticProvider"):
            answer = self.server.request("textDocument/diagnostic", {"textDocument": {"uri": path.as_uri()}})
            items = answer.get("items", []) if isinstance(answer, dict) else []
        else:
            since = self.server.document_changed_at(path)
            published = client.wait_diagnostics(path.as_uri(), since, self.server.settings.request_timeout_s)
            if published is None:
                raise LspError(f"{self.server.spec.name} published no diagnostics for {path.name} within "
                               f"{self.server.settings.request_timeout_s:g} s")
            items = published.items
        found: list[Diagnostic] = []
        for item in items:
            if not isinstance(item, dict) or "range" not in item:
                continue
            place = self.place(path.as_uri(), item["range"])
            if place is None:
                continue
            code = item.get("code")
            found.append(Diagnostic(place, DIAGNOSTIC_SEVERITIES.get(int(item.get("severity") or 1), "error"),
                                    str(item.get("message", "")).strip(), "" if code is None else str(code),
                                    str(item.get("source") or "")))
        return sorted(found, key=lambda d: (d.place.line, d.place.column, d.message))


def hover_text(contents: Any) -> str:
    """Hover contents (MarkupContent, MarkedString or a list of them) as plain text."""
    if contents is None:
        return ""
    if isinstance(contents, str):
        return contents.strip()
    if isinstance(contents, list):
        return "\n\n".join(part for part in (hover_text(item) for item in contents) if part)
    if isinstance(contents, dict):
        value = str(contents.get("value", "")).strip()
        language = contents.get("language")
        return f"```{language}\n{value}\n```" if language else value
    return ""

