"""The ts_c_* / ts_cpp_* tools and the shared name, error and edit rules of the code tools."""

from __future__ import annotations

import codecs
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from tests.conftest import snapshot

Run = Callable[..., ToolOutcome]

ENGINE = """\
#include <vector>

namespace gfx {
namespace detail {

template <typename T>
class Buffer : public Base<T>, private Counted {
 public:
  Buffer();
  ~Buffer();
  int size() const;
  void clear() { items_.clear(); }
  bool operator==(const Buffer& other) const;

 private:
  std::vector<T> items_;
};

template <typename T>
int Buffer<T>::size() const {
  return static_cast<int>(items_.size());
}

}  // namespace detail

struct Color {
  unsigned char r, g, b;
};

int blend(int a, int b) { return (a + b) / 2; }
int blend(int a, int b, int c) { return (a + b + c) / 3; }

}  // namespace gfx

template <typename T>
gfx::detail::Buffer<T>::~Buffer() {
  clear();
}

typedef gfx::Color rgb_t;
using Palette = std::vector<gfx::Color>;
enum class Mode { Fast, Slow };
"""


@pytest.fixture
def run(catalog: Catalog, ctx: ToolContext) -> Run:
    def go(tool: str, **arguments: object) -> ToolOutcome:
        return catalog.call(tool, arguments, ctx)

    return go


@pytest.fixture
def engine(root: Path) -> Path:
    path = root / "engine.hpp"
    path.write_text(ENGINE)
    return path


def test_cpp_outline_has_namespaces_classes_bases_and_out_of_line_members(run: Run, engine: Path) -> None:
    outcome = run("ts_cpp_get_code_outline", path="engine.hpp")
    assert not outcome.is_error, outcome.text
    assert outcome.structured is not None
    symbols = {(s["kind"], s["qualified_name"]) for s in outcome.structured["symbols"]}
    for expected in [("namespace", "gfx"), ("namespace", "gfx::detail"), ("class", "gfx::detail::Buffer"),
                     ("method", "gfx::detail::Buffer::clear"), ("method", "gfx::detail::Buffer::size"),
                     ("destructor", "gfx::detail::Buffer::~Buffer"), ("struct", "gfx::Color"),
                     ("function", "gfx::blend"), ("typedef", "rgb_t"), ("typedef", "Palette"), ("enum", "Mode")]:
        assert expected in symbols, f"{expected} not in outline:\n{outcome.text}"
    assert "[Class] Buffer : public Base<T>, private Counted (Lines 6-17)" in outcome.text
    assert "  [Namespace] detail" in outcome.text


def test_cpp_definition_by_class_method_namespace_and_dot(run: Run, engine: Path) -> None:
    clear = "  void clear() { items_.clear(); }"
    for name in ("Buffer::clear", "detail::Buffer::clear", "gfx::detail::Buffer::clear", "Buffer.clear",
                 "Buffer<int>::clear", "clear"):
        outcome = run("ts_cpp_get_definition", path="engine.hpp", name=name)
        assert outcome.text == clear, name


def test_cpp_out_of_line_definition_is_preferred_and_keeps_its_template_header(run: Run, engine: Path) -> None:
    outcome = run("ts_cpp_get_definition", path="engine.hpp", name="gfx::detail::Buffer::size")
    assert outcome.text == ("template <typename T>\nint Buffer<T>::size() const {\n"
                            "  return static_cast<int>(items_.size());\n}")
    destructor = run("ts_cpp_get_definition", path="engine.hpp", name="Buffer::~Buffer")
    assert destructor.text.startswith("template <typename T>\ngfx::detail::Buffer<T>::~Buffer() {")


def test_cpp_signature_of_method_class_and_operator(run: Run, engine: Path) -> None:
    size = run("ts_cpp_get_signature", path="engine.hpp", name="Buffer::size")
    assert size.text == "template <typename T>\nint Buffer<T>::size() const"
    klass = run("ts_cpp_get_signature", path="engine.hpp", name="Buffer")
    assert klass.text == "template <typename T>\nclass Buffer : public Base<T>, private Counted"
    operator = run("ts_cpp_get_signature", path="engine.hpp", name="Buffer::operator==")
    assert operator.text == "bool operator==(const Buffer& other) const"


def test_cpp_skeleton_keeps_classes_and_elides_bodies(run: Run, engine: Path) -> None:
    outcome = run("ts_cpp_get_skeleton", path="engine.hpp")
    assert "class Buffer : public Base<T>, private Counted {" in outcome.text
    assert "void clear() { ... }" in outcome.text
    assert "int Buffer<T>::size() const { ... }" in outcome.text
    assert "static_cast" not in outcome.text
    assert "struct Color {\n  unsigned char r, g, b;\n};" in outcome.text


def test_overloads_are_a_conflict_for_updates_until_a_line_picks_one(run: Run, engine: Path, root: Path) -> None:
    before = snapshot(root)
    ambiguous = run("ts_cpp_update_definition", path="engine.hpp", name="gfx::blend", new_content="int blend() {}")
    assert ambiguous.is_error
    assert "matches 2 definitions" in ambiguous.text and "@" in ambiguous.text
    assert snapshot(root) == before
    line = ENGINE.splitlines().index("int blend(int a, int b, int c) { return (a + b + c) / 3; }") + 1
    picked = run("ts_cpp_update_definition", path="engine.hpp", name=f"blend@{line}",
                 new_content="int blend(int a, int b, int c) { return a; }")
    assert not picked.is_error, picked.text
    text = engine.read_text()
    assert "int blend(int a, int b) { return (a + b) / 2; }" in text
    assert "int blend(int a, int b, int c) { return a; }" in text
    first = run("ts_cpp_get_definition", path="engine.hpp", name="blend")
    assert first.text.startswith("int blend(int a, int b) {") and "more definitions match" in first.text


def test_unknown_symbol_lists_the_closest_names(run: Run, engine: Path) -> None:
    outcome = run("ts_cpp_get_definition", path="engine.hpp", name="Buffer::clean")
    assert outcome.is_error
    assert "no definition named 'Buffer::clean'" in outcome.text
    assert "gfx::detail::Buffer::clear" in outcome.text


def test_update_indents_unindented_content_like_the_original(run: Run, engine: Path) -> None:
    outcome = run("ts_cpp_update_definition", path="engine.hpp", name="Buffer::clear",
                  new_content="void clear() {\n  items_.resize(0);\n}")
    assert not outcome.is_error, outcome.text
    assert "  void clear() {\n    items_.resize(0);\n  }\n" in engine.read_text()


def test_update_keeps_bom_and_crlf(run: Run, root: Path) -> None:
    path = root / "crlf.c"
    source = "int one(void) {\r\n  return 1;\r\n}\r\n\r\nint two(void) {\r\n  return 2;\r\n}\r\n"
    path.write_bytes(codecs.BOM_UTF8 + source.encode())
    outcome = run("ts_c_update_definition", path="crlf.c", name="two",
                  new_content="int two(void) {\n  return 22;\n}")
    assert not outcome.is_error, outcome.text
    expected = source.replace("return 2;", "return 22;")
    assert path.read_bytes() == codecs.BOM_UTF8 + expected.encode()


def test_broken_c_edit_is_refused_with_its_location(run: Run, root: Path) -> None:
    (root / "m.c").write_text("int main(void) {\n  return 0;\n}\n")
    before = snapshot(root)
    outcome = run("ts_c_update_definition", path="m.c", name="main", new_content="int main(void) {\n  return 0;\n")
    assert outcome.is_error
    assert "syntax error at line" in outcome.text and "nothing was changed" in outcome.text
    assert snapshot(root) == before


def test_existing_parse_errors_elsewhere_do_not_block_a_clean_edit(run: Run, root: Path) -> None:
    path = root / "messy.c"
    path.write_text("int ok(void) {\n  return 1;\n}\n\nint broken(void) {\n  return (1;\n}\n")
    outcome = run("ts_c_update_definition", path="messy.c", name="ok", new_content="int ok(void) {\n  return 2;\n}")
    assert not outcome.is_error, outcome.text
    assert path.read_text().startswith("int ok(void) {\n  return 2;\n}\n")


def test_ts_tools_parse_headers_without_extension(run: Run, root: Path) -> None:
    (root / "vector").write_text("namespace std {\ntemplate <class T> class vector {\n public:\n"
                                 "  void push_back(T x);\n};\n}\n")
    outcome = run("ts_cpp_get_code_outline", path="vector")
    assert "[Class] vector" in outcome.text
    generic = run("code_get_outline", path="vector")
    assert generic.is_error and "ts_cpp_" in generic.text


def test_c_tools_refuse_other_languages_and_code_tools_refuse_unknown_extensions(run: Run, root: Path) -> None:
    (root / "app.py").write_text("def f():\n    pass\n")
    (root / "notes.txt").write_text("hello\n")
    before = snapshot(root)
    wrong = run("ts_c_get_code_outline", path="app.py")
    assert wrong.is_error and "Python file" in wrong.text and "code_" in wrong.text
    unknown = run("code_update_definition", path="notes.txt", name="x", new_content="y")
    assert unknown.is_error and ".txt" in unknown.text and ".rs" in unknown.text and ".go" in unknown.text
    assert snapshot(root) == before


def test_bad_paths_are_errors_and_change_nothing(run: Run, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.c"
    outside.write_text("int f(void) { return 1; }\n")
    before_outside = outside.read_bytes()
    escaped = run("ts_c_update_definition", path=str(outside), name="f", new_content="int f(void) { return 2; }")
    assert escaped.is_error
    assert outside.read_bytes() == before_outside
    missing = run("ts_c_get_definition", path="nope.c", name="f")
    assert missing.is_error and "not found" in missing.text
    (root / "dir.c").mkdir()
    directory = run("code_get_outline", path="dir.c")
    assert directory.is_error and "directory" in directory.text
    empty_name = run("code_get_definition", path="nope.c", name="  ")
    assert empty_name.is_error


def test_empty_new_content_is_refused(run: Run, root: Path) -> None:
    (root / "e.c").write_text("int f(void) { return 1; }\n")
    before = snapshot(root)
    outcome = run("ts_c_update_definition", path="e.c", name="f", new_content="   ")
    assert outcome.is_error and "empty" in outcome.text
    assert snapshot(root) == before


def test_c_outline_of_a_header(run: Run, root: Path) -> None:
    (root / "list.h").write_text(
        "#ifndef LIST_H\n#define LIST_H\nstruct node { struct node *next; int value; };\n"
        "typedef struct { int count; struct node *head; } list_t;\nlist_t *list_new(void);\n"
        "static inline int list_empty(const list_t *l) { return l->count == 0; }\n"
        "union value { int i; double d; };\nenum kind { K_INT, K_DOUBLE };\n#endif\n")
    outcome = run("ts_c_get_code_outline", path="list.h")
    assert outcome.structured is not None
    found = {(s["kind"], s["name"]) for s in outcome.structured["symbols"]}
    assert {("struct", "node"), ("typedef", "list_t"), ("prototype", "list_new"), ("function", "list_empty"),
            ("union", "value"), ("enum", "kind")} <= found
    signature = run("ts_c_get_signature", path="list.h", name="list_empty")
    assert signature.text == "static inline int list_empty(const list_t *l)"


def test_glibc_style_attribute_macros_do_not_hide_declarations(run: Run, root: Path) -> None:
    (root / "sys.h").write_text(
        "__BEGIN_DECLS\n"
        "extern int open_it (const char *__path, int __flags) __THROW __nonnull ((1)) __wur;\n"
        "extern NCURSES_EXPORT(int) addch (const char);\n"
        "struct stat_info {\n  int mode;\n} __attribute__ ((__packed__));\n"
        "enum { _SC_ONE, _SC_TWO = 2 };\n"
        "__END_DECLS\n")
    outcome = run("ts_cpp_get_code_outline", path="sys.h")
    assert outcome.structured is not None
    found = {(s["kind"], s["name"], s["start_line"]) for s in outcome.structured["symbols"]}
    assert {("prototype", "open_it", 2), ("prototype", "addch", 3), ("struct", "stat_info", 4)} <= found
    signature = run("ts_cpp_get_signature", path="sys.h", name="open_it")
    assert signature.text.startswith("extern int open_it (const char *__path, int __flags) __THROW")


def test_update_keeps_undecodable_bytes_elsewhere(run: Run, root: Path) -> None:
    path = root / "legacy.c"
    original = b"/* caf\xe9 */\nint a(void) { return 1; }\nint b(void) { return 2; }\n"
    path.write_bytes(original)
    outcome = run("ts_c_update_definition", path="legacy.c", name="b", new_content="int b(void) { return 3; }")
    assert not outcome.is_error, outcome.text
    assert path.read_bytes() == original.replace(b"return 2;", b"return 3;")
    definition = run("ts_c_get_definition", path="legacy.c", name="a")
    assert definition.text == "int a(void) { return 1; }"


def test_deeply_nested_source_is_outlined_without_crashing(run: Run, root: Path) -> None:
    (root / "deep.c").write_text("int x = " + "(" * 5000 + "1" + ")" * 5000 + ";\nint f(void) { return 0; }\n")
    outcome = run("ts_c_get_code_outline", path="deep.c")
    assert not outcome.is_error, outcome.text
    assert "[Function] f (Lines 2-2)" in outcome.text


# -- macros the grammar cannot expand, and edits in files it cannot parse whole ---------------------

CODEC = """\
#include "codec.h"

static FASTCALL_ATTR PyObject *FASTCALL_MSVC decode_true(struct State *ds)
{
  return ds->yes;
}

static FASTCALL_ATTR INLINE_PREFIX void FASTCALL_MSVC strreverse(char *begin, char *end)
{
  char aux;
  while (end > begin) aux = *end, *end-- = *begin, *begin++ = aux;
}

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
  return TRUE;
}

static PyObject *decode_any(struct State *ds) FASTCALL_ATTR;

enum { SMALL_VALUE, LARGE_VALUE };
"""


@pytest.mark.parametrize(("name", "start"), [
    ("decode_true", "static FASTCALL_ATTR PyObject *FASTCALL_MSVC decode_true(struct State *ds)\n{"),
    ("strreverse", "static FASTCALL_ATTR INLINE_PREFIX void FASTCALL_MSVC strreverse(char *begin, char *end)\n{"),
    ("DllMain", "BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)\n{"),
    ("decode_any", "static PyObject *decode_any(struct State *ds) FASTCALL_ATTR;"),
])
def test_definitions_keep_their_macro_prefixes_and_names(run: Run, root: Path, name: str, start: str) -> None:
    (root / "codec.c").write_text(CODEC)
    definition = run("ts_c_get_definition", path="codec.c", name=name)
    assert not definition.is_error, definition.text
    assert definition.text.startswith(start)
    outline = run("ts_c_get_code_outline", path="codec.c")
    assert outline.structured is not None
    assert [s["name"] for s in outline.structured["symbols"]] == ["decode_true", "strreverse", "DllMain",
                                                                  "decode_any"]


HEADER = """\
namespace opts {

CXXOPTS_DIAGNOSTIC_PUSH
CXXOPTS_IGNORE_WARNING("-Weffc++")
class Value
{
  public:
  CXXOPTS_NODISCARD
  std::size_t
  count() const noexcept
  {
    return m_count;
  }

  template <typename T, typename std::enable_if<std::is_integral<T>::value>::type* = nullptr>
  T parsed() const { return T(); }

  std::size_t m_count = 0;
};
CXXOPTS_DIAGNOSTIC_POP

}  // namespace opts
"""


def test_a_member_in_a_file_with_parse_errors_elsewhere_is_edited_and_checked_alone(run: Run, root: Path) -> None:
    path = root / "opts.hpp"
    path.write_text(HEADER)
    definition = run("ts_cpp_get_definition", path="opts.hpp", name="Value::count")
    assert definition.text == ("  CXXOPTS_NODISCARD\n  std::size_t\n  count() const noexcept\n  {\n"
                               "    return m_count;\n  }")
    edited = definition.text.replace("return m_count;", "return m_count + 0;")
    outcome = run("ts_cpp_update_definition", path="opts.hpp", name="Value::count", new_content=edited)
    assert not outcome.is_error, outcome.text
    assert path.read_text() == HEADER.replace("return m_count;", "return m_count + 0;")
    before = snapshot(root)
    broken = run("ts_cpp_update_definition", path="opts.hpp", name="Value::count",
                 new_content=edited.replace("m_count + 0;", "m_count + ;"))
    assert broken.is_error and snapshot(root) == before
    assert "syntax error at line 12" in broken.text and "(line 5 of new_content)" in broken.text
    assert "already had parse errors elsewhere" in broken.text  # and the template line is not blamed
    assert "enable_if" not in broken.text


def test_an_unparseable_definition_is_checked_by_its_brackets(run: Run, root: Path) -> None:
    source = "int g(void) { return 1 }\n\nint k(int n) {\n  return n SQUARED;\n}\n"
    path = root / "odd.c"
    path.write_text(source)
    changed = "int k(int n) {\n  return (n + 1) SQUARED;\n}"
    outcome = run("ts_c_update_definition", path="odd.c", name="k", new_content=changed)
    assert not outcome.is_error, outcome.text
    assert "checked for balanced brackets, strings and comments only" in outcome.text
    assert path.read_text() == source.replace("return n SQUARED", "return (n + 1) SQUARED")
    path.write_text(source)
    before = snapshot(root)
    unbalanced = run("ts_c_update_definition", path="odd.c", name="k",
                     new_content=changed.replace("(n + 1)", "(n + 1"))
    assert unbalanced.is_error and snapshot(root) == before
    assert "does not balance its brackets as the old one did: 1 more '(' than ')'" in unbalanced.text


def test_new_content_defining_another_function_is_refused(run: Run, root: Path) -> None:
    (root / "m.c").write_text("int one(void) { return 1; }\nint two(void) { return 2; }\n")
    before = snapshot(root)
    outcome = run("ts_c_update_definition", path="m.c", name="one", new_content="int three(void) { return 3; }")
    assert outcome.is_error and snapshot(root) == before
    assert "new_content defines the function 'three', not the function 'one'" in outcome.text
    assert "rename it and its callers first" in outcome.text
    (root / "cart.js").write_text("export function total(cart) {\n  return cart.sum;\n}\n")
    before = snapshot(root)
    other = run("code_update_definition", path="cart.js", name="total",
                new_content="export function subtotal(cart) {\n  return cart.sum;\n}")
    assert other.is_error and snapshot(root) == before
    assert "defines the function 'subtotal', not the function 'total'" in other.text


def test_a_definition_given_back_with_preprocessor_lines_at_column_zero_changes_nothing(run: Run, root: Path) -> None:
    source = ("struct J {\n    void set_parents()\n    {\n#if DIAGNOSTICS\n        check();\n#endif\n    }\n};\n")
    path = root / "j.hpp"
    path.write_text(source)
    definition = run("ts_cpp_get_definition", path="j.hpp", name="J::set_parents")
    outcome = run("ts_cpp_update_definition", path="j.hpp", name="J::set_parents", new_content=definition.text)
    assert not outcome.is_error and "already exactly that" in outcome.text
    unindented = "void set_parents()\n{\n#if DIAGNOSTICS\n    check();\n#endif\n}"
    outcome = run("ts_cpp_update_definition", path="j.hpp", name="J::set_parents", new_content=unindented)
    assert not outcome.is_error, outcome.text
    assert path.read_text() == source
