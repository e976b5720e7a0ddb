"""The Python read tools on hand-made files: formats, overloads, nesting, and every bad input."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from tests.test_python_ast_edits import SAMPLE, VARIANTS, Py, py, write

__all__ = ["py"]  # the fixture, re-exported for pytest


def test_outline_is_hierarchical_with_kinds_ranges_and_decorators(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[1])
    outcome = py("py_get_code_outline", path="m.py")
    assert not outcome.is_error, outcome.text
    assert outcome.text == (
        "[Function] plain (Lines 10-12)\n"
        "[Function] decorated (Lines 15-18)  @decorate @other\n"
        "[Async Function] fetch (Lines 21-22)\n"
        "[Class] Outer (Lines 25-43)\n"
        "  [Method] method (Lines 30-31)\n"
        "  [Method] prop (Lines 33-35)  @property\n"
        "  [Class] Inner (Lines 37-40)\n"
        "    [Method] deep (Lines 38-40)\n"
        "  [Async Method] amethod (Lines 42-43)\n"
        "[Function] over (Lines 46-47)  @overload\n"
        "[Function] over (Lines 48-49)  @overload\n"
        "[Function] over (Lines 50-51)"
    )
    assert outcome.structured is not None
    qualnames = [e["qualname"] for e in outcome.structured["entries"]]
    assert "Outer.Inner.deep" in qualnames


def test_skeleton_keeps_signatures_docstrings_and_comments(py: Py, root: Path) -> None:
    text = (
        '"""Module doc."""\nimport os\n\n\n@cache  # keep me\ndef long_one(a,\n             b=1):  # header comment\n'
        '    """Doc.\n\n    More.\n    """\n    x = a + b\n    return x\n\n\nclass K(Base):\n    """K doc."""\n\n'
        '    LIMIT = 3\n\n    def m(self): return 1\n\n    async def n(self):\n        def inner():\n'
        '            pass\n        return inner\n'
    )
    write(root, "s.py", text, VARIANTS[0])
    outcome = py("py_get_skeleton", path="s.py")
    assert outcome.text == (
        '"""Module doc."""\nimport os\n\n\n@cache  # keep me\ndef long_one(a,\n             b=1):  # header comment\n'
        '    """Doc.\n\n    More.\n    """\n    ...\n\n\nclass K(Base):\n    """K doc."""\n\n'
        '    LIMIT = 3\n\n    def m(self): ...\n\n    async def n(self):\n        ...\n'
    )


def test_definition_of_an_overloaded_name_returns_every_occurrence(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    outcome = py("py_get_definition", path="m.py", name="over")
    assert outcome.structured is not None
    occurrences = outcome.structured["occurrences"]
    assert [(o["start_line"], o["end_line"]) for o in occurrences] == [(46, 47), (48, 49), (50, 51)]
    assert occurrences[0]["text"] == "@overload\ndef over(x: int) -> int: ...\n"
    assert "3 times" in outcome.text and "occurrence=N" in outcome.text
    second = py("py_get_definition", path="m.py", name="over", occurrence=2)
    assert second.text == "@overload\ndef over(x: str) -> str: ...\n"
    assert py("py_get_signature", path="m.py", name="over", occurrence=3).text == "def over(x):"


def test_definition_includes_decorators_and_trailing_body_comments(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[1])
    assert py("py_get_definition", path="m.py", name="decorated").text == (
        "@decorate\n@other(arg=1)\ndef decorated(a, b=2):\n    return a * b\n")
    assert py("py_get_definition", path="m.py", name="Outer.Inner").text == (
        '    class Inner:\n        def deep(self):\n            # nested method\n            return "deep"\n')
    text = "def f():\n    return 1\n    # trailing note\n\n# module comment\nX = 1\n"
    write(root, "t.py", text, VARIANTS[0])
    assert py("py_get_definition", path="t.py", name="f").text == "def f():\n    return 1\n    # trailing note\n"


def test_signatures_are_dedented_and_span_lines(py: Py, root: Path) -> None:
    text = "class A:\n    async def run(\n        self,\n        n: int = 1,\n    ) -> str:\n        return ''\n"
    write(root, "a.py", text, VARIANTS[0])
    assert py("py_get_signature", path="a.py", name="A.run").text == (
        "async def run(\n    self,\n    n: int = 1,\n) -> str:")
    assert py("py_get_signature", path="a.py", name="A").text == "class A:"


def test_docstrings_of_module_class_method_and_missing(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[1])
    assert py("py_get_docstring", path="m.py").text == "Sample module."
    assert py("py_get_docstring", path="m.py", name="Outer").text == "Outer class."
    missing = py("py_get_docstring", path="m.py", name="Outer.method")
    assert not missing.is_error and missing.text == "Outer.method has no docstring."
    assert missing.structured is not None and missing.structured["occurrences"][0]["text"] is None


def test_class_summary_lists_members(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    outcome = py("py_get_class_summary", path="m.py", name="Outer")
    assert outcome.text.splitlines()[:2] == ["class Outer:    # lines 25-43", '    """Outer class."""']
    assert "L30    def method(self, value):" in outcome.text
    assert "L33    @property def prop(self):" in outcome.text
    assert "L42    async def amethod(self):" in outcome.text
    assert "Nested classes: Inner (lines 37-40)" in outcome.text
    assert "Class variables: KIND (line 28)" in outcome.text
    not_a_class = py("py_get_class_summary", path="m.py", name="plain")
    assert not_a_class.is_error and "not a class" in not_a_class.text


def test_var_declarations(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE + "\nif os.name == 'nt':\n    SEP = '\\\\'\nelse:\n    SEP = '/'\n", VARIANTS[0])
    assert py("py_get_var_declaration", path="m.py", name="NAMES").text == (
        'NAMES: list[str] = ["a", "b"]  # the names\n')
    assert py("py_get_var_declaration", path="m.py", name="Outer.KIND").text == '    KIND = "outer"\n'
    both = py("py_get_var_declaration", path="m.py", name="SEP")
    assert both.structured is not None and len(both.structured["occurrences"]) == 2
    function = py("py_get_var_declaration", path="m.py", name="plain")
    assert function.is_error and "py_get_definition" in function.text


def test_imports_with_scopes_and_groups(py: Py, root: Path) -> None:
    text = (
        "from __future__ import annotations\nimport os.path as osp, json\nfrom . import sibling\n"
        "from ..pkg.mod import thing as alias\ntry:\n    import ujson\nexcept ImportError:\n    ujson = None\n\n\n"
        "def lazy():\n    import numpy as np\n    return np\n"
    )
    write(root, "i.py", text, VARIANTS[0])
    outcome = py("py_get_imports", path="i.py")
    data = outcome.structured
    assert data is not None
    assert data["stdlib"] == ["__future__", "json", "os"]
    assert data["external"] == ["numpy", "ujson"]
    assert data["relative"] == [".", "..pkg.mod"]
    where = {e["statement"]: e["where"] for e in data["imports"]}
    assert where == {
        "from __future__ import annotations": "module", "import os.path as osp": "module", "import json": "module",
        "from . import sibling": "module", "from ..pkg.mod import thing as alias": "module",
        "import ujson": "conditional", "import numpy as np": "in lazy",
    }
    assert "L12    import numpy as np   [in lazy]" in outcome.text


def test_check_syntax_reports_valid_files_and_where_errors_are(py: Py, root: Path) -> None:
    write(root, "ok.py", SAMPLE, VARIANTS[1])
    valid = py("py_check_syntax", path="ok.py")
    assert not valid.is_error and valid.structured == {
        "path": "ok.py", "valid": True, "line": None, "column": None, "message": "",
        "detail": "OK: ok.py is valid Python (51 lines)."}
    write(root, "bad.py", "x = 1\ndef f(:\n    pass\n", VARIANTS[0])
    bad = py("py_check_syntax", path="bad.py")
    assert bad.structured is not None and bad.structured["valid"] is False
    assert bad.structured["line"] == 2 and "def f(:" in bad.text and "^" in bad.text
    write(root, "stray.py", "x = 1\nreturn x\n", VARIANTS[0])
    stray = py("py_check_syntax", path="stray.py")
    assert stray.structured is not None and stray.structured["line"] == 2
    assert "'return' outside function" in stray.text


def test_unknown_names_suggest_the_closest(py: Py, root: Path) -> None:
    write(root, "m.py", SAMPLE, VARIANTS[0])
    bare_method = py("py_get_definition", path="m.py", name="method")
    assert bare_method.is_error and "Closest names: Outer.method" in bare_method.text
    typo = py("py_get_signature", path="m.py", name="Outer.Iner.deep")
    assert typo.is_error and "Outer.Inner.deep" in typo.text
    cpp_style = py("py_get_definition", path="m.py", name="Outer::method")
    assert cpp_style.is_error and "'Outer.method'" in cpp_style.text
    nothing_close = py("py_get_definition", path="m.py", name="zzzzzz")
    assert nothing_close.is_error and "py_get_code_outline" in nothing_close.text


@pytest.mark.parametrize("tool_name", ["py_get_skeleton", "py_get_code_outline", "py_get_imports",
                                       "py_check_syntax", "py_get_docstring"])
def test_read_tools_refuse_bad_paths(py: Py, root: Path, tool_name: str) -> None:
    (root.parent / "secret.py").write_text("X = 1\n")
    (root / "blob.py").write_bytes(b"\x00\x01binary\x00")
    (root / ".env").write_text("TOKEN=1\n")
    assert "outside the workspace" in py(tool_name, path="../secret.py").text
    assert "not found" in py(tool_name, path="nope.py").text
    assert "directory" in py(tool_name, path=".").text
    assert "binary" in py(tool_name, path="blob.py").text
    assert "blacklisted" in py(tool_name, path=".env").text or "protected" in py(tool_name, path=".env").text
    assert py(tool_name, path="").is_error


def test_unparseable_and_non_python_files_get_clear_errors(py: Py, root: Path) -> None:
    (root / "notes.txt").write_text("this is: not python at all (\n")
    outcome = py("py_get_code_outline", path="notes.txt")
    assert outcome.is_error and "is it a Python file?" in outcome.text and "line 1" in outcome.text
    (root / "cr.py").write_bytes(b"x = 1\rdef f():\r    pass\r")
    bare_cr = py("py_get_code_outline", path="cr.py")
    assert bare_cr.is_error and "bare CR" in bare_cr.text


def test_non_ascii_columns_are_characters_not_bytes(py: Py, root: Path) -> None:
    text = 'def café(x): return "ü" * x\n\n\nclass Ünïcode:\n    ñ = "é"; ß = 2\n'
    path = write(root, "u.py", text, VARIANTS[1])
    assert py("py_get_signature", path="u.py", name="café").text == "def café(x):"
    assert not py("py_set_signature", path="u.py", name="café", new_signature="def café(x, y=1):").is_error
    assert not py("py_set_var_declaration", path="u.py", name="Ünïcode.ß", new_declaration="ß = 'ẞ'").is_error
    expected = 'def café(x, y=1): return "ü" * x\n\n\nclass Ünïcode:\n    ñ = "é"; ß = \'ẞ\'\n'
    assert path.read_bytes() == codecs.BOM_UTF8 + expected.replace("\n", "\r\n").encode()


def test_tab_indented_files_keep_tabs(py: Py, root: Path) -> None:
    path = write(root, "t.py", "class T:\n\tdef a(self):\n\t\treturn 1\n", VARIANTS[0])
    outcome = py("py_add_def", path="t.py", name="T.b", new_content="def b(self):\n    return 2\n")
    assert not outcome.is_error, outcome.text
    assert path.read_text() == "class T:\n\tdef a(self):\n\t\treturn 1\n\n\tdef b(self):\n\t    return 2\n"
