"""The answers of the navigation tools, one shape whichever engine gave them.

``py_find_references``/``py_rename_symbol`` and ``find_references``/``rename_symbol`` return the
same reports: the engine that answered (a language server, jedi, or the symbol index by name),
the references or the diff, and — never dropped — the occurrences of the name the engine could
not tie to the symbol (``unsure``) and how many it tied to other symbols (``other_symbols``).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

UNSURE_SHOWN = 100
"""Unsure occurrences listed in one answer (the total is always given)."""


class Reference(BaseModel):
    path: str
    line: int
    column: int
    text: str
    definition: bool = False
    name_based: bool = Field(default=False, description="Matched by name only: the engine did not tie it to the "
                                                        "symbol (unsure), or the whole answer is name-based.")
    reason: str = Field(default="", description="Why an unsure occurrence is unsure.")

    def render(self) -> str:
        mark = " [definition]" if self.definition else " [name-based]" if self.name_based else ""
        why = f" ({self.reason})" if self.reason else ""
        return f"{self.path}:{self.line}:{self.column}:{mark} {self.text.strip()}{why}"


class Unsure(BaseModel):
    """Occurrences of the name the engine could not tie to the symbol (listed, never dropped)."""

    unsure: list[Reference] = Field(default_factory=list, description="Occurrences of the name not tied to the "
                                                                      "symbol nor shown to be another one.")
    unsure_total: int = 0
    other_symbols: int = Field(default=0, description="Occurrences of the name the engine tied to other symbols.")

    def render_unsure(self, verb: str) -> list[str]:
        lines: list[str] = []
        if self.unsure_total:
            more = f" (showing {len(self.unsure)})" if self.unsure_total > len(self.unsure) else ""
            lines.append(f"{self.unsure_total} occurrence(s) of the name {verb} could not be tied to this symbol"
                         f"{more}:")
            lines += [f"  {ref.render()}" for ref in self.unsure]
        if self.other_symbols:
            lines.append(f"{self.other_symbols} other occurrence(s) of the name are other symbols (left out).")
        return lines


class ReferenceReport(Unsure):
    symbol: str
    engine: str = Field(description="What answered: a language server, jedi, or the symbol index (name-based).")
    name_based: bool = Field(default=False, description="The whole answer matches the name only (a server was "
                                                        "starting or is missing): call again for scope-aware ones.")
    total: int
    files: int
    offset: int = 0
    next_offset: int | None = Field(default=None, description="Pass as offset for the next page; null on the "
                                                              "last page.")
    references: list[Reference]

    def render(self) -> str:
        if not self.references and not self.unsure_total:
            return f"no references to {self.symbol} ({self.engine})"
        head = f"{self.total} reference{'s' if self.total != 1 else ''} to {self.symbol} in {self.files} " \
               f"file{'s' if self.files != 1 else ''} ({self.engine})"
        if self.total > len(self.references):
            head += f" (showing {self.offset + 1}-{self.offset + len(self.references)}"
            head += f"; next page: offset={self.next_offset})" if self.next_offset is not None else ")"
        lines = [head + ":", *(ref.render() for ref in self.references)]
        lines += self.render_unsure("the engine")
        return "\n".join(lines)


class RenameReport(Unsure):
    symbol: str
    new_name: str
    engine: str = Field(description="What planned the rename: a language server, jedi, or the symbol index "
                                    "(name-based: shown, never applied).")
    name_based: bool = False
    applied: bool
    files: list[str]
    edits: int = Field(default=0, description="Text edits in the diff.")
    diff: str

    def render(self) -> str:
        count = f"{len(self.files)} file{'s' if len(self.files) != 1 else ''}"
        if self.applied:
            head = f"Renamed {self.symbol} to {self.new_name} in {count} ({self.engine}): {', '.join(self.files)}"
        else:
            head = (f"Renaming {self.symbol} to {self.new_name} changes {count} ({self.engine}; dry run: nothing "
                    f"written{'' if self.name_based else '; pass apply=true'}):")
        lines = [head, *self.render_unsure("the rename leaves")]
        return "\n".join(lines) + ("\n\n" + self.diff if self.diff else "")


class DefinitionReport(BaseModel):
    symbol: str
    engine: str
    name_based: bool = False
    definitions: list[Reference]

    def render(self) -> str:
        if not self.definitions:
            return f"no definition found for {self.symbol} ({self.engine})"
        head = f"{len(self.definitions)} definition{'s' if len(self.definitions) != 1 else ''} of {self.symbol} " \
               f"({self.engine}):"
        return "\n".join([head, *(ref.render() for ref in self.definitions)])


class SymbolInfo(BaseModel):
    symbol: str
    engine: str
    name_based: bool = False
    info: str = Field(description="The type, signature and documentation the engine gives for the symbol.")
    definitions: list[Reference] = Field(default_factory=list)

    def render(self) -> str:
        lines = [f"{self.symbol} ({self.engine}):", self.info or "(no information)"]
        if self.definitions:
            lines += ["defined at:", *(f"  {ref.render()}" for ref in self.definitions)]
        return "\n".join(lines)


class DiagnosticEntry(BaseModel):
    line: int
    column: int
    end_line: int
    end_column: int
    severity: str
    message: str
    code: str = ""
    source: str = ""


class DiagnosticsReport(BaseModel):
    path: str
    engine: str
    syntax_only: bool = Field(default=False, description="Only syntax errors were checked (no server answered).")
    total: int
    diagnostics: list[DiagnosticEntry]

    def render(self) -> str:
        if not self.diagnostics:
            what = "no syntax errors" if self.syntax_only else "no problems"
            return f"{self.path}: {what} ({self.engine})"
        lines = [f"{self.path}: {self.total} problem{'s' if self.total != 1 else ''} ({self.engine}):"]
        for item in self.diagnostics:
            code = f" [{item.code}]" if item.code else ""
            lines.append(f"{self.path}:{item.line}:{item.column}: {item.severity}{code}: {item.message}")
        return "\n".join(lines)
