"""The edit tools against a careful editor: a model of a text file's bytes (encoding, BOM, line endings,
final newline) that says what each edit must leave on disk and what each read must show.

The editor's rules, as a person expects them of VS Code or vim:

- a file is shown decoded in its encoding (a BOM names UTF-8/16; a legacy 8-bit file is named);
- a file whose lines all end CRLF is shown and edited with LF, and written back CRLF, new lines too;
  a file with LF endings gets LF lines; a file that mixes both is edited exactly as typed;
- a line put after the last line of a file that ends with a newline ends with one too; a file
  without a final newline keeps it that way; nothing else of the file changes, byte for byte.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from tests.differential.support import BOUNDED, World, mcp_session, text

pytestmark = pytest.mark.xdist_group("differential-edits")
"""One worker runs the module: its tests share one server (made once, not once per worker)."""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("edits")
    with mcp_session(root) as session:
        yield World(root, session)


# -- the careful editor -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    """A text file as an editor holds it: encoding, BOM, and each line's text with its own ending."""

    encoding: str
    bom: bytes
    lines: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, encoding: str, bom: bytes, body: str) -> Doc:
        lines: list[tuple[str, str]] = []
        rest = body
        while rest:
            cut = rest.find("\n")
            if cut < 0:
                lines.append((rest, ""))
                break
            line, rest = rest[:cut + 1], rest[cut + 1:]
            ending = "\r\n" if line.endswith("\r\n") else "\n"
            lines.append((line[:-len(ending)], ending))
        return cls(encoding, bom, tuple(lines))

    def data(self) -> bytes:
        return self.bom + "".join(body + ending for body, ending in self.lines).encode(self.encoding)

    @property
    def crlf(self) -> bool:
        """Every line ends CRLF (the last may have no ending)."""
        endings = {ending for _body, ending in self.lines if ending}
        return endings == {"\r\n"}

    @property
    def mixed(self) -> bool:
        return {ending for _body, ending in self.lines if ending} == {"\n", "\r\n"}

    def view(self) -> str:
        """What read_file shows."""
        return "".join(body + ("\n" if self.crlf and ending else ending) for body, ending in self.lines)

    def typed(self, text: str) -> str:
        """What typed text becomes in this file before the endings are put back."""
        return text if self.mixed else text.replace("\r\n", "\n")

    def with_view(self, view: str) -> Doc:
        """The file after its view became ``view``: CRLF files get CRLF back on every line."""
        return Doc.of(self.encoding, self.bom, view.replace("\n", "\r\n") if self.crlf else view)

    def edit(self, old: str, new: str, replace_all: bool) -> Doc | None:
        view, old, new = self.view(), self.typed(old), self.typed(new)
        count = view.count(old)
        if not old or old == new or count == 0 or (count > 1 and not replace_all):
            return None
        return self.with_view(view.replace(old, new) if replace_all else view.replace(old, new, 1))

    def set_slice(self, start: int, end: int, content: str) -> Doc:
        """Lines start..end (1-based, inclusive; end = start - 1 inserts) replaced by ``content``."""
        view_lines = [body + ("\n" if self.crlf and ending else ending) for body, ending in self.lines]
        new = self.typed(content)
        head, rest = view_lines[:start - 1], view_lines[end:]
        last = view_lines[end - 1] if start <= end else (head[-1] if head else "")
        if new and not new.endswith("\n") and (rest or last.endswith("\n")):
            new += "\n"
        if new and head and not head[-1].endswith("\n"):
            head[-1] += "\n"
        return self.with_view("".join(head) + new + "".join(rest))

    def overwrite(self, content: str) -> Doc:
        return self.with_view(content.replace("\r\n", "\n") if self.crlf else content)


# -- generated files and edits ----------------------------------------------------------------------

ENCODINGS = {"utf-8": b"", "utf-8-sig": codecs.BOM_UTF8, "utf-16-le": codecs.BOM_UTF16_LE,
             "utf-16-be": codecs.BOM_UTF16_BE, "cp1252": b""}
"""utf-8-sig stands for UTF-8 with a BOM (written as BOM + utf-8)."""
UNICODE = st.sampled_from(list("abcxyz =_():#0éü€ßñ漢字😀"))
LATIN = st.sampled_from(list("abcxyz =_():#0éüßñà"))
"""cp1252 letters that never make valid UTF-8 together (no byte in 0x80-0xBF): the file reads as cp1252."""


def line_of(encoding: str) -> st.SearchStrategy[str]:
    alphabet = LATIN if encoding == "cp1252" else UNICODE
    return st.lists(alphabet, max_size=10).map("".join)


@st.composite
def docs(draw: st.DrawFn) -> Doc:
    encoding = draw(st.sampled_from(sorted(ENCODINGS)))
    bodies = draw(st.lists(line_of(encoding), min_size=1, max_size=8))
    if encoding == "cp1252":
        bodies[0] = "Grüße aus Köln, schöne Straße"  # enough of a language for the encoding to be named
    style = draw(st.sampled_from(["\n", "\r\n", "mixed"]))
    endings = [("\r\n" if number % 2 else "\n") if style == "mixed" else style for number in range(len(bodies))]
    if not draw(st.booleans()):
        endings[-1] = ""  # no final newline
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    return Doc.of(codec, ENCODINGS[encoding], "".join(map("".join, zip(bodies, endings, strict=True))))


@st.composite
def operations(draw: st.DrawFn, doc: Doc) -> tuple[str, dict[str, Any]]:
    kind = draw(st.sampled_from(["edit_file", "set_file_slice", "write_file"]))
    fresh = line_of("cp1252" if doc.encoding == "cp1252" else "utf-8")
    typed_text = st.lists(st.tuples(fresh, st.sampled_from(["\n", "\r\n", ""])), max_size=3).map(
        lambda parts: "".join(body + ending for body, ending in parts))
    if kind == "edit_file":
        view = doc.view()
        start = draw(st.integers(0, max(len(view) - 1, 0)))
        old = view[start:start + draw(st.integers(1, 8))] or "a"
        return kind, {"old_string": old, "new_string": draw(typed_text), "replace_all": draw(st.booleans())}
    if kind == "set_file_slice":
        count = len(doc.lines)
        start = draw(st.integers(1, count + 1))
        end = draw(st.integers(start - 1, count))
        return kind, {"start_line": start, "end_line": end, "new_content": draw(typed_text)}
    return kind, {"content": draw(typed_text), "overwrite": True}


def expected_after(doc: Doc, kind: str, arguments: dict[str, Any]) -> Doc | None:
    if kind == "edit_file":
        return doc.edit(arguments["old_string"], arguments["new_string"], arguments["replace_all"])
    if kind == "set_file_slice":
        return doc.set_slice(arguments["start_line"], arguments["end_line"], arguments["new_content"])
    return doc.overwrite(arguments["content"])


def encodable(doc: Doc) -> bool:
    try:
        doc.data()
    except UnicodeEncodeError:
        return False
    return True


@BOUNDED
@given(data=st.data())
def test_generated_edits_leave_the_bytes_a_careful_editor_leaves(world: World, data: st.DataObject) -> None:
    doc = data.draw(docs())
    name = f"file{next(world.counter)}.txt"
    path = world.root / name
    path.write_bytes(doc.data())
    shown = text(world.session.ok("read_file", path=name))
    assert shown.startswith(doc.view())
    if doc.encoding == "cp1252":
        # Which 8-bit encoding a detector names is a guess; what matters is that it reads these bytes as the
        # editor does, and that edits are written back in it.
        named = shown.rsplit("[encoding: ", 1)[1].split(" ", 1)[0]
        assert doc.data().decode(named) == doc.data().decode("cp1252"), named
        doc = Doc.of(named, doc.bom, doc.data().decode(named))
    elif doc.encoding.startswith("utf-16"):
        assert shown.endswith(f"[encoding: {doc.encoding} (byte-order mark); edits keep it]")
    else:
        assert shown == doc.view()
    for _ in range(data.draw(st.integers(1, 3))):
        kind, arguments = data.draw(operations(doc))
        expected = expected_after(doc, kind, arguments)
        result = world.session.call(kind, path=name, **arguments)
        style = "crlf" if doc.crlf else "mixed" if doc.mixed else "lf"
        outcome = "refused" if result.is_error else "done"
        event(f"{kind} {outcome} {doc.encoding} {style}")  # the mix: pytest --hypothesis-show-statistics
        if expected is None or not encodable(expected):
            assert result.is_error, (kind, arguments, text(result))
            assert path.read_bytes() == doc.data()
            continue
        assert not result.is_error, (kind, arguments, text(result))
        assert path.read_bytes() == expected.data(), (kind, arguments)
        doc = expected
    if doc.lines:
        start = data.draw(st.integers(1, len(doc.lines)))
        end = data.draw(st.integers(start, len(doc.lines)))
        sliced = text(world.session.ok("get_file_slice", path=name, start_line=start, end_line=end))
        assert sliced.startswith("".join(body + ("\n" if doc.crlf and ending else ending)
                                         for body, ending in doc.lines[start - 1:end]))


# -- the reported cases -----------------------------------------------------------------------------


@pytest.mark.parametrize(("before", "start", "end", "content", "after"), [
    (b"a\nb\n", 3, 2, "c", b"a\nb\nc\n"),  # the reported case: appended after the last line
    (b"a\r\nb\r\n", 3, 2, "c", b"a\r\nb\r\nc\r\n"),
    (b"a\nb", 3, 2, "c", b"a\nb\nc"),  # no final newline before: none after
    (b"a\nb\r\n", 3, 2, "c\r\n", b"a\nb\r\nc\r\n"),  # mixed: as typed
])
def test_set_file_slice_appending_keeps_the_files_last_line_ending(world: World, before: bytes, start: int, end: int,
                                                                   content: str, after: bytes) -> None:
    name = f"append{next(world.counter)}.txt"
    (world.root / name).write_bytes(before)
    world.session.ok("set_file_slice", path=name, start_line=start, end_line=end, new_content=content)
    assert (world.root / name).read_bytes() == after


def test_a_latin1_file_is_read_in_its_encoding_and_named(world: World) -> None:
    name = f"latin{next(world.counter)}.txt"
    (world.root / name).write_bytes("Grüße aus Köln: café, naïve\n".encode("latin-1"))
    shown = text(world.session.ok("read_file", path=name))
    assert shown == ("Grüße aus Köln: café, naïve\n\n"
                     "[encoding: cp1252 (detected; the file is not UTF-8); edits write it back in cp1252]")
    world.session.ok("edit_file", path=name, old_string="café", new_string="Café")
    assert (world.root / name).read_bytes() == "Grüße aus Köln: Café, naïve\n".encode("latin-1")
    refused = world.session.refused("edit_file", path=name, old_string="Café", new_string="カフェ")
    assert "cannot be encoded as cp1252" in refused


def test_stray_bytes_in_a_utf8_file_are_named_and_kept(world: World) -> None:
    name = f"stray{next(world.counter)}.txt"
    (world.root / name).write_bytes("naïve \xff\n".encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff"))
    shown = text(world.session.ok("read_file", path=name))
    assert shown.startswith("naïve \ufffd\n") and "1 byte could not be decoded" in shown
    world.session.ok("edit_file", path=name, old_string="naïve", new_string="naive")
    assert (world.root / name).read_bytes() == b"naive \xff\n"


def test_a_large_page_ends_at_a_line_and_says_where_to_go_on(world: World) -> None:
    """The reported case: a 220,000-character page is cut at a line boundary, with the offset to continue
    from; nothing is saved under .codeward/outputs for a read."""
    name = f"large{next(world.counter)}.txt"
    body = "".join(f"{number:06} " + "x" * 93 + "\n" for number in range(2200))
    (world.root / name).write_text(body)
    outputs = world.root / ".codeward" / "outputs"
    before = sorted(outputs.iterdir()) if outputs.exists() else []
    pieces, offset = [], 1
    while True:
        shown = text(world.session.ok("read_file", path=name, offset=offset, limit=2200))
        page, _, note = shown.rpartition("\n[lines ")
        if not note.endswith("]") or "continue with offset=" not in note:
            pieces.append(shown)
            break
        pieces.append(page)
        offset = int(note.rsplit("offset=", 1)[1].rstrip("]"))
        assert page.endswith("x\n") and len(shown) <= 100_000
    assert "".join(pieces) == body and len(pieces) == 3
    assert (sorted(outputs.iterdir()) if outputs.exists() else []) == before
