"""Edit round-trips for the Python write tools, through the catalog.

Each edit is checked byte for byte: the bytes before and after the edited region are
unchanged and the region holds exactly the requested text — in a plain LF file and in a
UTF-8 BOM + CRLF file. Refused edits (syntax errors, unknown symbols, bad anchors, paths
outside the workspace) leave every file on disk unchanged.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from tests.conftest import snapshot

SAMPLE = '''\
"""Sample module."""

import os
from typing import overload

LIMIT = 10
NAMES: list[str] = ["a", "b"]  # the names


def plain(x):
    """Plain function."""
    return x + 1


@decorate
@other(arg=1)
def decorated(a, b=2):
    return a * b


async def fetch(url: str) -> bytes:
    return b""


class Outer:
    """Outer class."""

    KIND = "outer"

    def method(self, value):
        return value

    @property
    def prop(self):
        return 1

    class Inner:
        def deep(self):
            # nested method
            return "deep"

    async def amethod(self):
        await fetch("x")


@overload
def over(x: int) -> int: ...
@overload
def over(x: str) -> str: ...
def over(x):
    return x
'''

Py = Callable[..., ToolOutcome]


class Variant:
    """How a fixture file is stored on disk: plain LF, or UTF-8 BOM with CRLF line endings."""

    def __init__(self, name: str, bom: bool, newline: str) -> None:
        self.name, self.bom, self.newline = name, bom, newline

    def encode(self, text: str, *, whole_file: bool = True) -> bytes:
        prefix = codecs.BOM_UTF8 if self.bom and whole_file else b""
        return prefix + text.replace("\n", self.newline).encode("utf-8")

    def __repr__(self) -> str:
        return self.name


VARIANTS = [Variant("lf", False, "\n"), Variant("bom-crlf", True, "\r\n")]


@pytest.fixture
def py(catalog: Catalog, ctx: ToolContext) -> Py:
    """Call a tool through the catalog (tool name positional, so a 'name' argument can pass)."""

    def run(tool_name: str, /, **arguments: Any) -> ToolOutcome:
        return catalog.call(tool_name, arguments, ctx)

    return run


@pytest.fixture(params=VARIANTS, ids=repr)
def variant(request: pytest.FixtureRequest) -> Variant:
    return request.param  # type: ignore[no-any-return]


def write(root: Path, name: str, text: str, variant: Variant) -> Path:
    path = root / name
    path.write_bytes(variant.encode(text))
    return path


def assert_exact_change(path: Path, before_text: str, old: str, new: str, variant: Variant) -> None:
    """The file is ``before_text`` with the one occurrence of ``old`` replaced by ``new``, byte for byte."""
    before = variant.encode(before_text)
    old_bytes = variant.encode(old, whole_file=False)
    new_bytes = variant.encode(new, whole_file=False)
    assert before.count(old_bytes) == 1, "the fixture region must be unique"
    at = before.index(old_bytes)
    after = path.read_bytes()
    assert after[:at] == before[:at], "bytes before the edited region changed"
    assert after[at + len(new_bytes):] == before[at + len(old_bytes):], "bytes after the edited region changed"
    assert after[at : at + len(new_bytes)] == new_bytes
    assert len(after) == len(before) - len(old_bytes) + len(new_bytes)


def assert_refused(outcome: ToolOutcome, root: Path, before: dict[str, bytes], *words: str) -> None:
    assert outcome.is_error, outcome.text
    assert snapshot(root) == before, "a refused edit changed files on disk"
    for word in words:
        assert word in outcome.text, f"{word!r} missing from: {outcome.text}"


# -- py_update_definition -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "occurrence", "old", "new_content", "expected"),
    [
        pytest.param("Outer.method", None, "    def method(self, value):\n        return value\n",
                     "def method(self, value):\n    return value * 2\n",
                     "    def method(self, value):\n        return value * 2\n", id="method-reindented"),
        pytest.param("decorated", None, "@decorate\n@other(arg=1)\ndef decorated(a, b=2):\n    return a * b\n",
                     "@cached\ndef decorated(a, b=2):\n    return a + b",
                     "@cached\ndef decorated(a, b=2):\n    return a + b\n", id="decorators-replaced-together"),
        pytest.param("fetch", None, 'async def fetch(url: str) -> bytes:\n    return b""\n',
                     'async def fetch(url: str, timeout: float = 1.0) -> bytes:\n    return b"x"\n',
                     'async def fetch(url: str, timeout: float = 1.0) -> bytes:\n    return b"x"\n', id="async"),
        pytest.param("Outer.Inner.deep", None,
                     '        def deep(self):\n            # nested method\n            return "deep"\n',
                     '    def deep(self):\n        return "deeper"\n',
                     '        def deep(self):\n            return "deeper"\n', id="nested-class-method"),
        pytest.param("over", 3, "def over(x):\n    return x\n", "def over(x):\n    return (x)\n",
                     "def over(x):\n    return (x)\n", id="third-overload"),
    ],
)
def test_update_definition_changes_exactly_the_definition(
    py: Py, root: Path, variant: Variant, name: str, occurrence: int | None, old: str, new_content: str,
    expected: str,
) -> None:
    path = write(root, "m.py", SAMPLE, variant)
    args: dict[str, Any] = {"path": "m.py", "name": name, "new_content": new_content}
    if occurrence:
        args["occurrence"] = occurrence
    outcome = py("py_update_definition", **args)
    assert not outcome.is_error, outcome.text
    assert_exact_change(path, SAMPLE, old, expected, variant)
    reread = py("py_get_definition", path="m.py", name=name, occurrence=occurrence or 1)
    assert reread.text == expected


def test_reindenting_keeps_string_values_and_moves_docstrings(py: Py, root: Path) -> None:
    path = write(root, "m.py", SAMPLE, VARIANTS[0])
    content = ('def method(self, value):\n    """Summary.\n\n    Details.\n    """\n'
               '    sql = """SELECT 1\nFROM t\n    """\n    return value\n')
    outcome = py("py_update_definition", path="m.py", name="Outer.method", new_content=content)
    assert not outcome.is_error, outcome.text
    expected = ('    def method(self, value):\n        """Summary.\n\n        Details.\n        """\n'
                '        sql = """SELECT 1\nFROM t\n    """\n        return value\n')
    assert_exact_change(path, SAMPLE, "    def method(self, value):\n        return value\n", expected, VARIANTS[0])
    assert py("py_get_docstring", path="m.py", name="Outer.method").text == "Summary.\n\nDetails."


def test_update_definition_refuses_a_syntax_error_and_says_where(py: Py, root: Path, variant: Variant) -> None:
    write(root, "m.py", SAMPLE, variant)
    before = snapshot(root)
    outcome = py("py_update_definition", path="m.py", name="Outer.method",
                 new_content="def method(self, value):\n    return value +\n")
    assert_refused(outcome, root, before, "refused", "m.py, line 31", "return value +", "unchanged")


def test_update_definition_refuses_inconsistent_indentation(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    before = snapshot(root)
    outcome = py("py_update_definition", path="m.py", name="plain",
                 new_content="def plain(x):\n        y = 1\n    return y\n")
    assert_refused(outcome, root, before, "line 12", "unindent")


def test_update_of_an_ambiguous_name_needs_an_occurrence(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    before = snapshot(root)
    outcome = py("py_update_definition", path="m.py", name="over", new_content="def over(x):\n    pass\n")
    assert_refused(outcome, root, before, "3 times", "lines 46-47", "occurrence")
    out_of_range = py("py_update_definition", path="m.py", name="over", occurrence=4,
                      new_content="def over(x):\n    pass\n")
    assert_refused(out_of_range, root, before, "occurrence 4 is out of range")


# -- py_set_signature -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "signature", "old", "new"),
    [
        pytest.param("plain", "def plain(x, y=0)", "def plain(x):\n", "def plain(x, y=0):\n", id="colon-added"),
        pytest.param("Outer.amethod", "async def amethod(self, retries: int = 3) -> None:",
                     "    async def amethod(self):\n", "    async def amethod(self, retries: int = 3) -> None:\n",
                     id="async-method"),
        pytest.param("decorated", "def decorated(\n    a,\n    b=3,\n):",
                     "def decorated(a, b=2):\n", "def decorated(\n    a,\n    b=3,\n):\n",
                     id="multiline-keeps-decorators"),
        pytest.param("decorated", "@decorate\ndef decorated(a, b=3):",
                     "@decorate\n@other(arg=1)\ndef decorated(a, b=2):\n", "@decorate\ndef decorated(a, b=3):\n",
                     id="with-decorators-replaces-them"),
        pytest.param("Outer.Inner", "class Inner(Base):", "    class Inner:\n", "    class Inner(Base):\n",
                     id="nested-class"),
        pytest.param("over", "def over(x: bytes) -> bytes:", "def over(x: int) -> int: ...",
                     "def over(x: bytes) -> bytes: ...", id="one-line-body-kept"),
    ],
)
def test_set_signature_changes_only_the_header(
    py: Py, root: Path, variant: Variant, name: str, signature: str, old: str, new: str
) -> None:
    path = write(root, "m.py", SAMPLE, variant)
    args: dict[str, Any] = {"path": "m.py", "name": name, "new_signature": signature}
    if name == "over":
        args["occurrence"] = 1
    outcome = py("py_set_signature", **args)
    assert not outcome.is_error, outcome.text
    assert_exact_change(path, SAMPLE, old, new, variant)


def test_set_signature_refuses_bodies_wrong_kinds_and_broken_headers(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    before = snapshot(root)
    assert_refused(py("py_set_signature", path="m.py", name="plain", new_signature="def plain(x):\n    return 2"),
                   root, before, "not a single def/class header")
    assert_refused(py("py_set_signature", path="m.py", name="plain", new_signature="class plain:"),
                   root, before, "class header", "def")
    assert_refused(py("py_set_signature", path="m.py", name="plain", new_signature="def plain(x,"),
                   root, before, "not a single def/class header")
    assert_refused(py("py_set_signature", path="m.py", name="plain", new_signature=""), root, before, "empty")


# -- py_set_var_declaration -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "declaration", "old", "new"),
    [
        pytest.param("LIMIT", "LIMIT = 20", "LIMIT = 10\n", "LIMIT = 20\n", id="module"),
        pytest.param("NAMES", "NAMES: tuple[str, ...] = ('a',)", 'NAMES: list[str] = ["a", "b"]  # the names\n',
                     "NAMES: tuple[str, ...] = ('a',)\n", id="annotated-with-comment"),
        pytest.param("Outer.KIND", 'KIND = (\n    "inner"\n)', '    KIND = "outer"\n',
                     '    KIND = (\n        "inner"\n    )\n', id="class-level-multiline"),
    ],
)
def test_set_var_declaration_replaces_the_statement(
    py: Py, root: Path, variant: Variant, name: str, declaration: str, old: str, new: str
) -> None:
    path = write(root, "m.py", SAMPLE, variant)
    outcome = py("py_set_var_declaration", path="m.py", name=name, new_declaration=declaration)
    assert not outcome.is_error, outcome.text
    assert_exact_change(path, SAMPLE, old, new, variant)
    assert py("py_get_var_declaration", path="m.py", name=name).text == new


def test_set_var_declaration_on_a_shared_line_replaces_only_its_statement(py: Py, root: Path) -> None:
    text = "A = 1; B = 2  # pair\n"
    path = write(root, "v.py", text, VARIANTS[0])
    outcome = py("py_set_var_declaration", path="v.py", name="B", new_declaration="B = 3")
    assert not outcome.is_error, outcome.text
    assert path.read_text() == "A = 1; B = 3  # pair\n"


def test_set_var_declaration_refuses_other_names_and_functions(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    before = snapshot(root)
    assert_refused(py("py_set_var_declaration", path="m.py", name="LIMIT", new_declaration="OTHER = 1"),
                   root, before, "defines the variable 'OTHER', not the variable 'LIMIT'", "py_rename_symbol")
    assert_refused(py("py_set_var_declaration", path="m.py", name="LIMIT", new_declaration="def LIMIT(): pass"),
                   root, before, "defines the function 'LIMIT', not the variable 'LIMIT'")
    assert_refused(py("py_set_var_declaration", path="m.py", name="plain", new_declaration="plain = 1"),
                   root, before, "is a function", "py_get_definition")
    assert_refused(py("py_set_var_declaration", path="m.py", name="LIMIT", new_declaration="LIMIT = ("),
                   root, before, "not valid Python")


# -- definitions swapped for another name -----------------------------------------------------


@pytest.mark.parametrize(("tool_name", "args", "words"), [
    ("py_update_definition", {"name": "plain", "new_content": "x = 1"},
     ("new_content defines the variable 'x', not the function 'plain'", "py_set_var_declaration")),
    ("py_update_definition", {"name": "Outer.method", "new_content": "def other(self, value):\n    return value"},
     ("new_content defines the function 'other', not the method 'method'", "rename=true", "py_add_def")),
    ("py_set_signature", {"name": "plain", "new_signature": "def simple(x):"},
     ("new_signature defines the function 'simple', not the function 'plain'", "py_rename_symbol")),
    ("py_set_signature", {"name": "Outer", "new_signature": "class Inner2:"},
     ("defines the class 'Inner2', not the class 'Outer'",)),
], ids=["variable-for-def", "other-method", "other-signature", "other-class"])
def test_new_text_naming_another_symbol_is_refused(
        py: Py, root: Path, variant: Variant, tool_name: str, args: dict[str, Any], words: tuple[str, ...]) -> None:
    write(root, "m.py", SAMPLE, variant)
    write(root, "user.py", "from m import plain\n\nprint(plain(1))\n", variant)
    before = snapshot(root)
    assert_refused(py(tool_name, path="m.py", **args), root, before, *words)


def test_rename_true_renames_the_callers_with_the_edit(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[1])
    write(root, "user.py", "from m import plain\n\nprint(plain(1))\n", VARIANTS[0])
    outcome = py("py_set_signature", path="m.py", name="plain", new_signature="def incremented(x: int) -> int:",
                 rename=True)
    assert not outcome.is_error, outcome.text
    assert "Renamed plain to incremented and its references in 1 other file (user.py)" in outcome.text
    assert (root / "user.py").read_text() == "from m import incremented\n\nprint(incremented(1))\n"
    expected = SAMPLE.replace("def plain(x):", "def incremented(x: int) -> int:")
    assert (root / "m.py").read_bytes() == VARIANTS[1].encode(expected)


def test_rename_true_with_a_broken_edit_renames_nothing(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    write(root, "user.py", "from m import plain\n\nprint(plain(1))\n", VARIANTS[0])
    before = snapshot(root)
    outcome = py("py_update_definition", path="m.py", name="plain", rename=True,
                 new_content="def incremented(x):\n    return await x\n")  # parses alone, does not compile
    assert outcome.is_error and "'await' outside async function" in outcome.text
    after = {name: data for name, data in snapshot(root).items() if not name.startswith(".codeward/")}
    assert after == before, "the rename was applied without the edit"


# -- py_remove_def --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "old"),
    [
        pytest.param("plain", 'def plain(x):\n    """Plain function."""\n    return x + 1\n\n\n', id="function"),
        pytest.param("Outer.prop", "    @property\n    def prop(self):\n        return 1\n\n", id="decorated-method"),
        pytest.param("Outer.amethod", '\n    async def amethod(self):\n        await fetch("x")\n', id="last-in-class"),
        pytest.param("Outer.Inner",
                     '    class Inner:\n        def deep(self):\n            # nested method\n'
                     '            return "deep"\n\n', id="nested-class"),
    ],
)
def test_remove_def_cuts_the_definition_and_its_spacing(
    py: Py, root: Path, variant: Variant, name: str, old: str
) -> None:
    path = write(root, "m.py", SAMPLE, variant)
    outcome = py("py_remove_def", path="m.py", name=name)
    assert not outcome.is_error, outcome.text
    assert_exact_change(path, SAMPLE, old, "", variant)
    assert py("py_get_definition", path="m.py", name=name).is_error


def test_remove_def_refuses_to_empty_a_block(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    before = snapshot(root)
    outcome = py("py_remove_def", path="m.py", name="Outer.Inner.deep")
    assert_refused(outcome, root, before, "expected an indented block", "only statement", "pass")


# -- py_add_def -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "anchor_type", "anchor_symbol", "old", "new"),
    [
        pytest.param("added", "def added():\n    return 1\n", "end", "", "def over(x):\n    return x\n",
                     "def over(x):\n    return x\n\n\ndef added():\n    return 1\n", id="end-of-file"),
        pytest.param("early", "def early():\n    pass", "start", "", "from typing import overload\n\nLIMIT",
                     "from typing import overload\n\n\ndef early():\n    pass\n\n\nLIMIT", id="start-of-file"),
        pytest.param("Outer.helper", "        def helper(self):\n            return 2", "end", "",
                     '        await fetch("x")\n',
                     '        await fetch("x")\n\n    def helper(self):\n        return 2\n',
                     id="end-of-class-by-name"),
        pytest.param("first", "def first(self):\n    pass\n", "start", "Outer", '    """Outer class."""\n',
                     '    """Outer class."""\n\n    def first(self):\n        pass\n', id="start-of-class"),
        pytest.param("pre", "def pre():\n    pass\n", "before", "fetch", "\n\nasync def fetch",
                     "\n\ndef pre():\n    pass\n\n\nasync def fetch", id="before-function"),
        pytest.param("after_method", "@staticmethod\ndef after_method():\n    pass\n", "after", "Outer.method",
                     "        return value\n",
                     "        return value\n\n    @staticmethod\n    def after_method():\n        pass\n",
                     id="after-method-decorated"),
        pytest.param("over", "@overload\ndef over(x: bytes) -> bytes: ...\n", "after", "over",
                     "def over(x):\n    return x\n",
                     "def over(x):\n    return x\n\n\n@overload\ndef over(x: bytes) -> bytes: ...\n",
                     id="overload-may-share-a-name"),
        pytest.param("agen", "async def agen(self):\n    yield 1\n", "before", "Outer.Inner",
                     "    class Inner:\n", "    async def agen(self):\n        yield 1\n\n    class Inner:\n",
                     id="async-before-nested-class"),
    ],
)
def test_add_def_inserts_exactly_at_the_anchor(
    py: Py, root: Path, variant: Variant, name: str, content: str, anchor_type: str, anchor_symbol: str,
    old: str, new: str,
) -> None:
    path = write(root, "m.py", SAMPLE, variant)
    outcome = py("py_add_def", path="m.py", name=name, new_content=content, anchor_type=anchor_type,
                 anchor_symbol=anchor_symbol)
    assert not outcome.is_error, outcome.text
    assert_exact_change(path, SAMPLE, old, new, variant)


def test_add_def_into_an_empty_file_and_one_without_final_newline(py: Py, root: Path) -> None:
    empty = write(root, "empty.py", "", VARIANTS[0])
    assert not py("py_add_def", path="empty.py", name="f", new_content="def f():\n    pass").is_error
    assert empty.read_text() == "def f():\n    pass\n"
    bare = root / "bare.py"
    bare.write_text("X = 1")
    assert not py("py_add_def", path="bare.py", name="f", new_content="def f():\n    pass").is_error
    assert bare.read_text() == "X = 1\n\n\ndef f():\n    pass\n"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        pytest.param({"name": "plain", "new_content": "def plain():\n    pass"}, ("already exists", "line 10"),
                     id="duplicate"),
        pytest.param({"name": "g", "new_content": "def f():\n    pass"}, ("defines the function 'f', not 'g'",),
                     id="name-mismatch"),
        pytest.param({"name": "g", "new_content": "def g(:\n    pass"}, ("not valid Python", "line 1"),
                     id="syntax-error"),
        pytest.param({"name": "g", "new_content": "def g():\n    pass\nreturn 1"}, ("outside function",),
                     id="compile-error"),
        pytest.param({"name": "g", "new_content": "def g():\n    pass", "anchor_type": "before"},
                     ("needs an anchor_symbol",), id="anchor-missing"),
        pytest.param({"name": "g", "new_content": "def g():\n    pass", "anchor_type": "after",
                      "anchor_symbol": "Outer.methd"}, ("no symbol named 'Outer.methd'", "Outer.method"),
                     id="anchor-unknown"),
        pytest.param({"name": "g", "new_content": "def g():\n    pass", "anchor_type": "end",
                      "anchor_symbol": "plain"}, ("is a function", "before"), id="anchor-not-a-class"),
        pytest.param({"name": "g", "new_content": "def g():\n    pass", "anchor_type": "middle"},
                     ("anchor_type", "start"), id="anchor-type-invalid"),
        pytest.param({"name": "Other.g", "new_content": "def g(self):\n    pass", "anchor_type": "after",
                      "anchor_symbol": "Outer.method"}, ("class Other", "class Outer"), id="container-mismatch"),
        pytest.param({"name": "g()", "new_content": "def g():\n    pass"}, ("not a Python name",), id="bad-name"),
    ],
)
def test_add_def_refusals_change_nothing(py: Py, root: Path, args: dict[str, Any], words: tuple[str, ...]) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[1])
    before = snapshot(root)
    assert_refused(py("py_add_def", path="m.py", **args), root, before, *words)


# -- py_move_def ----------------------------------------------------------------------------


def test_move_def_within_a_file(py: Py, root: Path, variant: Variant) -> None:
    path = write(root, "m.py", SAMPLE, variant)
    outcome = py("py_move_def", src_path="m.py", dest_path="m.py", name="plain", anchor_type="after",
                 anchor_symbol="fetch")
    assert not outcome.is_error, outcome.text
    plain = 'def plain(x):\n    """Plain function."""\n    return x + 1\n'
    expected = SAMPLE.replace(plain + "\n\n", "").replace(
        'async def fetch(url: str) -> bytes:\n    return b""\n',
        'async def fetch(url: str) -> bytes:\n    return b""\n\n\n' + plain)
    assert path.read_bytes() == variant.encode(expected)


def test_move_def_into_a_class_renames_and_reindents(py: Py, root: Path) -> None:
    path = write(root, "m.py", SAMPLE, VARIANTS[0])
    outcome = py("py_move_def", src_path="m.py", dest_path="m.py", name="decorated", dest_name="Outer.twice",
                 anchor_type="end")
    assert not outcome.is_error, outcome.text
    moved = "@decorate\n@other(arg=1)\ndef decorated(a, b=2):\n    return a * b\n"
    expected = SAMPLE.replace(moved + "\n\n", "").replace(
        '        await fetch("x")\n',
        '        await fetch("x")\n\n    @decorate\n    @other(arg=1)\n    def twice(a, b=2):\n        return a * b\n')
    assert path.read_text() == expected


def test_move_def_across_files_keeps_each_files_encoding(py: Py, root: Path) -> None:
    src = write(root, "m.py", SAMPLE, VARIANTS[0])
    dest_text = '"""Destination."""\n\nimport os\n\n\ndef existing():\n    return os.sep\n'
    dest = write(root, "dest.py", dest_text, VARIANTS[1])
    outcome = py("py_move_def", src_path="m.py", dest_path="dest.py", name="Outer.Inner", dest_name="Deep",
                 anchor_type="before", anchor_symbol="existing")
    assert not outcome.is_error, outcome.text
    inner = '    class Inner:\n        def deep(self):\n            # nested method\n            return "deep"\n\n'
    assert_exact_change(src, SAMPLE, inner, "", VARIANTS[0])
    moved = 'class Deep:\n    def deep(self):\n        # nested method\n        return "deep"\n\n\n'
    assert_exact_change(dest, dest_text, "def existing():", moved + "def existing():", VARIANTS[1])


def test_move_def_to_a_new_file_takes_its_imports_and_is_imported_back(py: Py, root: Path) -> None:
    src = write(root, "m.py", "import os\n\n\ndef where():\n    return os.getcwd()\n\n\nprint(where())\n", VARIANTS[0])
    outcome = py("py_move_def", src_path="m.py", dest_path="pkg/new.py", name="where")
    assert not outcome.is_error, outcome.text
    assert (root / "pkg" / "new.py").read_text() == "import os\n\n\ndef where():\n    return os.getcwd()\n"
    assert src.read_text() == "import os\nfrom pkg.new import where\n\n\nprint(where())\n"
    assert "pkg/new.py gets the imports the moved code needs: import os" in outcome.text
    assert "m.py imports where back from pkg/new.py (it still uses it)" in outcome.text


def test_move_def_refused_on_one_side_writes_neither(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[1])
    write(root, "dest.py", "X = 1\n", VARIANTS[0])
    before = snapshot(root)
    emptied = py("py_move_def", src_path="m.py", dest_path="dest.py", name="Outer.Inner.deep")
    assert_refused(emptied, root, before, "m.py", "expected an indented block")
    bad_anchor = py("py_move_def", src_path="m.py", dest_path="dest.py", name="plain", anchor_type="after",
                    anchor_symbol="missing")
    assert_refused(bad_anchor, root, before, "no symbol named 'missing'")
    clash = py("py_move_def", src_path="m.py", dest_path="dest.py", name="plain", dest_name="X")
    assert_refused(clash, root, before, "X already exists in dest.py")
    into_itself = py("py_move_def", src_path="m.py", dest_path="m.py", name="Outer", anchor_type="end",
                     anchor_symbol="Outer.Inner")
    assert_refused(into_itself, root, before, "inside the definition being moved")
    outside = py("py_move_def", src_path="m.py", dest_path="../elsewhere.py", name="plain")
    assert_refused(outside, root, before, "outside the workspace")
    assert not (root.parent / "elsewhere.py").exists()


def test_move_def_refuses_a_name_taken_at_the_destination(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    write(root, "dest.py", "def plain():\n    return 0\n", VARIANTS[0])
    before = snapshot(root)
    assert_refused(py("py_move_def", src_path="m.py", dest_path="dest.py", name="plain"), root, before,
                   "already exists", "dest.py")


# -- py_region_wrap -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "old", "new"),
    [
        pytest.param(6, 7, 'LIMIT = 10\nNAMES: list[str] = ["a", "b"]  # the names\n',
                     '#region: Config\nLIMIT = 10\nNAMES: list[str] = ["a", "b"]  # the names\n#endregion: Config\n',
                     id="module-level"),
        pytest.param(30, 35, "    def method(self, value):\n        return value\n\n    @property\n"
                     "    def prop(self):\n        return 1\n",
                     "    #region: Config\n    def method(self, value):\n        return value\n\n    @property\n"
                     "    def prop(self):\n        return 1\n    #endregion: Config\n", id="inside-class"),
    ],
)
def test_region_wrap_adds_markers_at_the_code_indentation(
    py: Py, root: Path, variant: Variant, start: int, end: int, old: str, new: str
) -> None:
    path = write(root, "m.py", SAMPLE, variant)
    outcome = py("py_region_wrap", path="m.py", start_line=start, end_line=end, region_name="Config")
    assert not outcome.is_error, outcome.text
    assert_exact_change(path, SAMPLE, old, new, variant)


@pytest.mark.parametrize(
    ("start", "end", "label", "words"),
    [
        pytest.param(10, 11, "X", ("continues on line 12",), id="splits-header-from-body"),
        pytest.param(30, 33, "X", ("line 33 is a decorator of Outer.prop", "line 34"), id="ends-in-decorators"),
        pytest.param(16, 19, "X", ("line 16 is inside the decorators of decorated",), id="starts-in-decorators"),
        pytest.param(31, 35, "X", ("line 33 is less indented",), id="leaves-the-block"),
        pytest.param(37, 39, "X", ("continues on line 40",), id="ends-inside-a-block"),
        pytest.param(5, 3, "X", ("not a range",), id="reversed"),
        pytest.param(1, 99, "X", ("which has 51 lines",), id="past-the-end"),
        pytest.param(6, 7, "", ("non-empty single line",), id="empty-label"),
        pytest.param(6, 7, "a\nb", ("single line",), id="multiline-label"),
    ],
)
def test_region_wrap_refusals(py: Py, root: Path, start: int, end: int, label: str, words: tuple[str, ...]) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    before = snapshot(root)
    outcome = py("py_region_wrap", path="m.py", start_line=start, end_line=end, region_name=label)
    assert_refused(outcome, root, before, *words)


def test_region_wrap_never_splits_a_string_or_a_statement(py: Py, root: Path) -> None:
    text = 'def f():\n    return """a\nb\nc"""\n\n\nx = g(\n    1,\n)\n'
    write(root, "s.py", text, VARIANTS[0])
    before = snapshot(root)
    for start, end, line in ((3, 3, 3), (2, 3, 3), (8, 9, 8), (7, 8, 8)):
        outcome = py("py_region_wrap", path="s.py", start_line=start, end_line=end, region_name="X")
        assert_refused(outcome, root, before, f"line {line} is in the middle of a statement or string")


# -- refusals shared by every write tool ----------------------------------------------------

WRITE_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("py_update_definition", {"name": "plain", "new_content": "def plain():\n    pass"}),
    ("py_set_signature", {"name": "plain", "new_signature": "def plain(y):"}),
    ("py_set_var_declaration", {"name": "LIMIT", "new_declaration": "LIMIT = 1"}),
    ("py_remove_def", {"name": "plain"}),
    ("py_add_def", {"name": "g", "new_content": "def g():\n    pass"}),
    ("py_region_wrap", {"start_line": 6, "end_line": 6, "region_name": "X"}),
]


@pytest.mark.parametrize(("tool_name", "args"), WRITE_CALLS, ids=[c[0] for c in WRITE_CALLS])
def test_write_tools_refuse_bad_paths_and_broken_files(
    py: Py, root: Path, tool_name: str, args: dict[str, Any]
) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[1])
    write(root, "broken.py", "def plain(:\n    pass\nLIMIT = 1\n", VARIANTS[0])
    (root.parent / "outside.py").write_text(SAMPLE)
    before = snapshot(root)
    outside_before = (root.parent / "outside.py").read_bytes()
    assert_refused(py(tool_name, path="../outside.py", **args), root, before, "outside the workspace")
    assert_refused(py(tool_name, path=str(root.parent / "outside.py"), **args), root, before, "outside")
    assert (root.parent / "outside.py").read_bytes() == outside_before
    assert_refused(py(tool_name, path="missing.py", **args), root, before, "not found")
    assert_refused(py(tool_name, path="broken.py", **args), root, before, "cannot parse", "line 1", "def plain(:")
    assert_refused(py(tool_name, path=".", **args), root, before, "directory")


@pytest.mark.parametrize(("tool_name", "args"), WRITE_CALLS[:4], ids=[c[0] for c in WRITE_CALLS[:4]])
def test_write_tools_refuse_unknown_symbols_with_suggestions(
    py: Py, root: Path, tool_name: str, args: dict[str, Any]
) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    before = snapshot(root)
    misspelled = {**args, "name": args["name"][:-1] + "x"}
    outcome = py(tool_name, path="m.py", **misspelled)
    assert_refused(outcome, root, before, "Closest names", args["name"])
