"""Macros the C and C++ grammars cannot expand, blanked before parsing.

tree-sitter parses C and C++ without a preprocessor, so a macro where the grammar expects a
keyword (``static FASTCALL_ATTR PyObject *FASTCALL_MSVC decode(...)``, ``CXXOPTS_NODISCARD``
alone on the line above a method, ``NLOHMANN_JSON_NAMESPACE_BEGIN``) breaks the declaration it
sits in: the definition loses its name or its first words, or the whole file goes to an error.
:func:`blank_macros` replaces such macros by spaces of the same length, as universal-ctags is
told to ignore them with ``-I``: newlines are kept and ``#`` lines are never touched, so every
byte offset and line number of the rest stays where it was, and tools always show the original
text. The rules are lexical and conservative: a word is blanked only where C allows no other
reading of it (an upper-case word between a type and a name, after a ``*``, in front of a type
at the start of a declaration, alone on its line between statements, after a parameter list).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

RESERVED_MACRO = re.compile(
    rb"_(?<![\w.>:]_)(?:_[A-Z][A-Z0-9_]+|[A-Z][A-Z0-9]*_[A-Z0-9_]+|_attribute__|_attribute_\w+__|_asm__|_asm"
    rb"|_wur|_nonnull|_attr_\w+|_fortified_attr_access|_extension__)\b(?!\s*(?:,|=(?!=)|}|::))"
)
"""Reserved, upper-case macro names (``__THROW``, ``_GLIBCXX_NOEXCEPT``, ``__BEGIN_DECLS``) and GNU
attribute spellings: not in enumerator, assignment or scope position. (It starts with the literal
``_`` and looks behind it, which lets the regex engine skip ahead: 1 ms instead of 50 on a 900 KB
header.)"""
TYPE_MACRO = re.compile(rb"(?<![\w.>:])[A-Z][A-Z0-9_]{2,}\s*\((\s*[A-Za-z_][\w \t*]*)\)(?=\s*\**\s*[A-Za-z_]\w*\s*\()")
"""``NCURSES_EXPORT(int) insch (...)``, ``EXTERN(boolean) f(...)``: an upper-case macro wrapping the
return type; the macro name and its parentheses are blanked, the type is kept."""
DIRECTIVE_LINE = re.compile(rb"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)
BLOCK_COMMENT = re.compile(rb"/\*[^\n]*?\*/")
"""A one-line ``/* ... */``: inside a ``#define`` continued over lines, the grammar ends the
directive at such a comment followed by a backslash, so those comments are blanked."""

_CAPS = rb"[A-Z][A-Z0-9_]*[A-Z0-9]"
"""An upper-case word (``WINAPI``, ``FASTCALL_MSVC``)."""
_MACRO = rb"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
"""An upper-case word with an underscore (``FASTCALL_ATTR``, ``CXXOPTS_NODISCARD``): macro style."""
_ARGS = rb"(?:[ \t]*\((?:[^()\n]|\([^()\n]*\))*\))?"
_SPECIFIER = (rb"(?:static|extern|inline|__inline|__inline__|const|volatile|register|virtual|explicit|friend"
              rb"|constexpr|consteval|constinit|mutable|thread_local|_Thread_local|typedef)")
_TYPE = (rb"(?:(?:const|volatile|struct|union|enum|class|typename|unsigned|signed|long|short)[ \t]+)*"
         rb"(?:::)?[A-Za-z_]\w*(?:<[^;{}()\n]*>)?(?:::[A-Za-z_]\w*(?:<[^;{}()\n]*>)?)*")
_NAME = rb"(?:[A-Za-z_]\w*(?:<[^;{}()\n]*>)?::)*~?[A-Za-z_]\w*"
NOT_A_TYPE = frozenset({
    b"static", b"extern", b"inline", b"const", b"volatile", b"register", b"virtual", b"explicit", b"friend",
    b"constexpr", b"consteval", b"constinit", b"mutable", b"thread_local", b"typedef", b"struct", b"union",
    b"enum", b"class", b"typename", b"template", b"return", b"else", b"case", b"goto", b"new", b"delete",
    b"throw", b"sizeof", b"operator", b"using", b"namespace", b"public", b"private", b"protected", b"co_return",
    b"co_yield", b"co_await", b"do", b"if", b"while", b"for", b"switch", b"default", b"break", b"continue",
    b"unsigned", b"signed", b"long", b"short", b"decltype", b"alignas", b"alignof", b"static_assert",
})
"""Words before an upper-case word that make it a type, not a macro (``static FOO f()``)."""

AFTER_POINTER = re.compile(rb"[*&][ \t]*(" + _CAPS + rb")(?=[ \t\n]+" + _NAME + rb"[ \t\n]*\()")
"""``PyObject *FASTCALL_MSVC decode(``: no word may sit between a ``*`` and the declared name."""
BETWEEN_TYPE_AND_NAME = re.compile(rb"(?<![\w])" + _CAPS + rb"(?=[ \t\n]+" + _NAME + rb"[ \t\n]*\()")
"""``void FASTCALL_MSVC strreverse(``, ``BOOL WINAPI DllMain(``: a second word after the type."""
BEFORE_TYPE = re.compile(
    rb"((?:" + _MACRO + rb"[ \t]+(?:" + _SPECIFIER + rb"[ \t]+)*)+)"
    rb"(?=" + _TYPE + rb"[ \t*&]+(?:" + _CAPS + rb"[ \t]+)?[*&]*[ \t]*" + _NAME + rb"[ \t]*[(=;\[{])")
"""``static FASTCALL_ATTR INLINE_PREFIX void f(``, ``CXXOPTS_LINKONCE_CONST std::string LQUOTE(...)``:
macros in front of the type of a declaration (matched at a macro word that only specifiers precede
on its line)."""
MACRO_WORD = re.compile(rb"(?<![\w])" + _MACRO + rb"(?![\w])")
LINE_HEAD = re.compile(rb"[ \t]*(?:" + _SPECIFIER + rb"[ \t]+)*")
ALONE_ON_LINE = re.compile(rb"^[ \t]*(" + _MACRO + _ARGS + rb")[ \t]*(?=\n|//|/\*|$)", re.MULTILINE)
"""``CXXOPTS_NODISCARD``, ``CXXOPTS_IGNORE_WARNING("-Weffc++")``, ``NLOHMANN_JSON_NAMESPACE_BEGIN``
on a line of their own, between declarations or statements (checked around each match)."""
AFTER_PARAMETERS = re.compile(
    rb"\)[ \t]*(" + _MACRO + _ARGS + rb")(?=[ \t\n]*(?:[;{]|const\b|override\b|final\b|noexcept\b))")
"""``decode_any(struct DecoderState *ds) FASTCALL_ATTR;``: an attribute after the parameter list."""
CLASS_EXPORT = re.compile(rb"\b(?:class|struct|union)[ \t]+(" + _MACRO + rb")(?=[ \t\n]+[A-Za-z_]\w*[ \t\n]*"
                          rb"(?:[:{<]|final\b))")
"""``class Q_CORE_EXPORT QString {``: an export macro between the keyword and the class name."""


def blank_macros(data: bytes) -> bytes:
    """``data`` with the macros the grammar would stumble on replaced by spaces (same length)."""
    if b"_" not in data and not re.search(rb"[A-Z]{2}", data):
        return data
    directives = [(m.start(), m.end()) for m in DIRECTIVE_LINE.finditer(data)]
    out = bytearray(data)
    for start, end in directives:
        if b"/*" in data[start:end] and b"\\\n" in data[start:end]:
            for comment in BLOCK_COMMENT.finditer(data, start, end):
                out[comment.start():comment.end()] = _spaces(comment.group())

    def in_directive(position: int) -> bool:
        index = bisect.bisect_right(directives, (position, len(data) + 1)) - 1
        return index >= 0 and directives[index][0] <= position < directives[index][1]

    def blank(start: int, end: int) -> None:
        if not in_directive(start):
            out[start:end] = _spaces(data[start:end])

    for match in RESERVED_MACRO.finditer(data):
        blank(match.start(), _after_arguments(data, match.end()))
    for match in TYPE_MACRO.finditer(data):
        if not in_directive(match.start()):
            out[match.start():match.start(1)] = _spaces(data[match.start():match.start(1)])
            out[match.end(1):match.end()] = b" "
    _blank_groups(AFTER_POINTER, bytes(out), blank)
    current = bytes(out)
    for match in BETWEEN_TYPE_AND_NAME.finditer(current):
        if _after_a_type(current, match.start()):
            blank(match.start(), match.end())
    _blank_before_types(bytes(out), blank)
    _blank_groups(AFTER_PARAMETERS, bytes(out), blank)
    _blank_groups(CLASS_EXPORT, bytes(out), blank)
    for match in ALONE_ON_LINE.finditer(bytes(out)):
        if _between_statements(out, match.start(1), match.end(1)):
            blank(match.start(1), match.end(1))
    return bytes(out)


def _after_a_type(data: bytes, position: int) -> bool:
    """Whether the word before ``position`` (across blanks) is a type: a name that is not a keyword, or ``>``."""
    cursor = position - 1
    while cursor >= 0 and data[cursor] in b" \t\n":
        cursor -= 1
    if cursor < 0 or cursor == position - 1:
        return False
    if data[cursor] == ord(">"):
        return True
    end = cursor + 1
    while cursor >= 0 and (data[cursor] == 0x5F or chr(data[cursor]).isalnum()):
        cursor -= 1
    word = data[cursor + 1:end]
    return bool(word) and not word[:1].isdigit() and word not in NOT_A_TYPE


def _blank_before_types(data: bytes, blank: Callable[[int, int], None]) -> None:
    cursor = 0
    for word in MACRO_WORD.finditer(data):
        if word.start() < cursor:
            continue
        line_start = data.rfind(b"\n", 0, word.start()) + 1
        head = LINE_HEAD.match(data, line_start)
        if head is None or head.end() != word.start():
            continue
        found = BEFORE_TYPE.match(data, word.start())
        if found is not None:
            blank(found.start(1), found.end(1))
            cursor = found.end(1)


def _blank_groups(pattern: re.Pattern[bytes], data: bytes, blank: Callable[[int, int], None]) -> None:
    for match in pattern.finditer(data):
        blank(match.start(1), match.end(1))


def _between_statements(data: bytes | bytearray, start: int, end: int) -> bool:
    """Whether a macro alone on its line stands where a declaration or statement could start.

    Before it: the start of the file, a ``;``, ``{``, ``}``, ``)``, ``:`` or a comment or
    directive line; after it: the end of the file or a word, ``~``, ``[``, ``#`` — not an
    operator, a comma or ``}`` right after ``{`` (the last enumerator of an enum).
    """
    before = _previous_significant(data, start)
    after = _next_significant(data, end)
    if before not in (None, *b";{}):/") and not _after_directive(data, start):
        return False
    if after is None:
        return True
    if after == ord("}"):
        return before != ord("{")
    return chr(after).isalpha() or after in b"_~[#"


def _previous_significant(data: bytes | bytearray, position: int) -> int | None:
    cursor = position - 1
    while cursor >= 0 and data[cursor] in b" \t\r\n":
        cursor -= 1
    return data[cursor] if cursor >= 0 else None


def _next_significant(data: bytes | bytearray, position: int) -> int | None:
    """The next byte that is not blank or in a comment."""
    cursor = position
    while cursor < len(data):
        if data[cursor] in b" \t\r\n":
            cursor += 1
        elif data.startswith(b"//", cursor):
            end = data.find(b"\n", cursor)
            cursor = len(data) if end < 0 else end
        elif data.startswith(b"/*", cursor):
            end = data.find(b"*/", cursor + 2)
            cursor = len(data) if end < 0 else end + 2
        else:
            return data[cursor]
    return None


def _after_directive(data: bytes | bytearray, position: int) -> bool:
    """Whether the last non-blank line before ``position`` is a ``#`` directive or a ``//`` comment."""
    line_start = data.rfind(b"\n", 0, position)
    while line_start > 0:
        previous = data.rfind(b"\n", 0, line_start)
        line = data[previous + 1:line_start].strip()
        if line:
            return line.startswith((b"#", b"//"))
        line_start = previous
    return False


def _spaces(chunk: bytes) -> bytes:
    return bytes(b if b == 0x0A else 0x20 for b in chunk)


def _after_arguments(data: bytes, pos: int) -> int:
    """End of a balanced ``( ... )`` right after ``pos`` (spaces allowed), else ``pos``."""
    cursor = pos
    while cursor < len(data) and data[cursor] in b" \t":
        cursor += 1
    if cursor >= len(data) or data[cursor] != 0x28:
        return pos
    depth = 0
    limit = min(len(data), cursor + 4000)
    for i in range(cursor, limit):
        if data[i] == 0x28:
            depth += 1
        elif data[i] == 0x29:
            depth -= 1
            if depth == 0:
                return i + 1
    return pos


def macro_prefix_start(data: bytes, prepared: bytes, start: int) -> int:
    """Where a definition starting at ``start`` really starts, with the macros blanked before it.

    Macros blanked on the definition's own first line (``CXXOPTS_LINKONCE_CONST std::string``)
    belong to it, and so does a bare macro word alone on the line right above
    (``CXXOPTS_NODISCARD``) — unless it opens or closes something (``..._BEGIN``, ``..._END``,
    ``..._PUSH``, ``..._POP``) or takes arguments (``IGNORE_WARNING("-Weffc++")``, a statement).
    """
    cursor = start
    while True:
        line_start = prepared.rfind(b"\n", 0, cursor) + 1
        before = prepared[line_start:cursor]
        if before.strip(b" \t"):
            return cursor
        if data[line_start:cursor].strip(b" \t"):
            cursor = line_start + (len(data[line_start:cursor]) - len(data[line_start:cursor].lstrip(b" \t")))
            continue
        if line_start == 0:
            return cursor
        above_start = prepared.rfind(b"\n", 0, line_start - 1) + 1
        above = data[above_start:line_start - 1].strip(b" \t\r")
        if prepared[above_start:line_start - 1].strip(b" \t\r") or not _PREFIX_WORD.fullmatch(above):
            return cursor
        cursor = above_start + (len(data[above_start:line_start - 1]) - len(data[above_start:line_start - 1]
                                                                              .lstrip(b" \t")))


_PREFIX_WORD = re.compile(rb"(?!\w*(?:BEGIN|END|PUSH|POP)\b)" + _MACRO)
