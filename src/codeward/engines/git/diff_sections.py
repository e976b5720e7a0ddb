"""Cut a unified git diff into its per-file sections and withhold those of protected files.

The pathspec excludes already keep blacklisted files out of a diff; this is the second,
independent check on the output itself. It fails closed: a section whose file name cannot be
read with certainty (an unusual header) is withheld as if it were protected.
"""

from __future__ import annotations

from collections.abc import Callable

from codeward.kernel.workspace import private_key_marker

HEADER = "diff --git "
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def withhold(diff: str, is_protected: Callable[[str], bool]) -> tuple[str, int]:
    """``diff`` without the sections of files ``is_protected`` names; and how many were left out."""
    kept: list[str] = []
    withheld = 0
    for section in _sections(diff):
        if not section.startswith(HEADER):
            kept.append(section)  # text before the first header (none in a plain diff)
            continue
        paths = _paths(section)
        if not paths or any(is_protected(path) for path in paths) or _carries_key(section):
            withheld += 1
        else:
            kept.append(section)
    return "".join(kept), withheld


def _carries_key(section: str) -> bool:
    """A section adding, removing or showing a line that begins a private key."""
    for line in section.splitlines()[1:]:
        if line[:1] in ("+", "-", " ") and not line.startswith(("+++ ", "--- ")) \
                and private_key_marker(line[1:].encode("utf-8", "surrogateescape")):
            return True
    return False


def _sections(diff: str) -> list[str]:
    sections: list[str] = []
    current: list[str] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith(HEADER) and current:
            sections.append("".join(current))
            current = []
        current.append(line)
    if current:
        sections.append("".join(current))
    return sections


def _paths(section: str) -> set[str]:
    """Every file name a section mentions (relative to the top), or an empty set when unsure."""
    lines = section.splitlines()
    found: set[str] = set()
    header = _header_paths(lines[0][len(HEADER):])
    if header is None:
        return set()
    found.update(header)
    for line in lines[1:]:
        if line.startswith(("@@", "Binary files", "GIT binary patch")):
            break
        for marker, prefix in (("rename from ", ""), ("rename to ", ""), ("copy from ", ""), ("copy to ", ""),
                               ("--- ", "a/"), ("+++ ", "b/")):
            if line.startswith(marker):
                name = _unquote(line[len(marker):])
                if name is None:
                    return set()
                if name != "/dev/null":
                    if prefix and not name.startswith(prefix):
                        return set()
                    found.add(name[len(prefix):])
    return found


def _header_paths(rest: str) -> tuple[str, str] | None:
    """The two names of ``a/X b/Y`` (quoted or not); None when they cannot be told apart."""
    if rest.startswith('"'):
        first_end = _quoted_end(rest)
        if first_end is None:
            return None
        first, second = _unquote(rest[:first_end]), _unquote(rest[first_end + 1:])
    else:
        # Unquoted names may hold spaces: only the symmetric form (same name twice) is certain.
        half = (len(rest) - 1) // 2
        first, second = rest[:half], rest[half + 1:]
        if rest[half:half + 1] != " " or first[2:] != second[2:]:
            return _rename_header(rest)
    if first is None or second is None or not first.startswith("a/") or not second.startswith("b/"):
        return None
    return first[2:], second[2:]


def _rename_header(rest: str) -> tuple[str, str] | None:
    """``a/X b/Y`` with X != Y: accepted only when exactly one ' b/' splits it."""
    if rest.count(" b/") != 1 or not rest.startswith("a/"):
        return None
    first, second = rest.split(" b/")
    return first[2:], second


def _quoted_end(text: str) -> int | None:
    index = 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == '"':
            return index + 1
        index += 1
    return None


def _unquote(text: str) -> str | None:
    """A name as git prints it: plain, or C-quoted with octal bytes. None when malformed."""
    if not text.startswith('"'):
        return text
    if len(text) < 2 or not text.endswith('"'):
        return None
    body, out, index = text[1:-1], bytearray(), 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out += char.encode("utf-8", "surrogateescape")
            index += 1
            continue
        following = body[index + 1:index + 2]
        if following in _ESCAPES:
            out.append(_ESCAPES[following])
            index += 2
        elif body[index + 1:index + 4].isdigit() and len(body[index + 1:index + 4]) == 3:
            out.append(int(body[index + 1:index + 4], 8) & 0xFF)
            index += 4
        else:
            return None
    return out.decode("utf-8", "surrogateescape")
