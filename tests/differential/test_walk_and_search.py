"""Listings and searches against git, ripgrep and find: on three real projects, and on generated ignore layouts.

One server for the module: its root holds the unpacked projects (each a git repository with
its build leftovers, a secret, links) and a folder per generated layout.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeward.engines.files import ripgrep
from tests.differential.support import BOUNDED, World, find_entries, git, git_init, mcp_session, rg, unpack

pytestmark = [pytest.mark.skipif(ripgrep.find_binary() is None, reason="ripgrep is not installed"),
              pytest.mark.xdist_group("differential-walk-and-search")]
"""One worker runs the module: its tests share one server (made once, not once per worker)."""

GITIGNORES = {
    "tomli": "__pycache__/\n*.py[cod]\n/build/\n/dist/\n*.egg-info/\n.venv/\n.tox/\n*.log\n",
    "pluggy": "__pycache__/\n*.pyc\n/build/\n/dist/\n/src/pluggy/_version.py\n.tox/\n*.log\ndocs/_build/\n",
}
"""The two sdists ship no .gitignore; these are the usual lines of such projects (iniconfig's is its own)."""
LEFTOVERS = ["src/{pkg}/__pycache__/__init__.cpython-311.pyc", "build/lib/{pkg}/__init__.py", "dist/{pkg}.tar.gz",
             ".tox/py311/log/1.log", "run.log", "src/{pkg}.egg-info/PKG-INFO"]
"""What a developer's checkout holds besides the sources: all of it ignored."""
SECRETS = {".env": "API_TOKEN=hunter2\n", "credentials.toml": "[default]\ntoken = 'x'\n",
           "deploy_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"}
"""Files git and ripgrep show and codeward withholds: the documented difference, asserted below."""
KEY_FILES = {"deploy_key"}
"""A private key under an innocent name: its name is listed (a walk does not read every file), but no
read shows its bytes and no search shows it at all."""


class Walks(World):
    @property
    def outside(self) -> Path:
        """A folder beside the workspace, which links lead to."""
        return self.root.parent / "outside"

    def project(self, name: str) -> Path:
        return self.root / name


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walks]:
    base = tmp_path_factory.mktemp("walks")
    root, outside = base / "workspace", base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "elsewhere.txt").write_text("def elsewhere(): pass\n")
    for name in ("iniconfig", "tomli", "pluggy"):
        top = unpack(name, root)
        if name in GITIGNORES:
            (top / ".gitignore").write_text(GITIGNORES[name])
        git_init(top)
        for leftover in LEFTOVERS:
            path = top / leftover.format(pkg=name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("def leftover(): pass\n")
    iniconfig = root / "iniconfig"
    for secret, body in SECRETS.items():
        (iniconfig / secret).write_text(body)
    (iniconfig / "outside_link").symlink_to(outside / "elsewhere.txt")
    (iniconfig / "outside_dir").symlink_to(outside, target_is_directory=True)
    (iniconfig / "source_link").symlink_to("src", target_is_directory=True)
    (iniconfig / "readme_link").symlink_to("README.rst")
    (iniconfig / "dangling").symlink_to("no-such-file.txt")
    # The reported case: *.log at the root, a nested .gitignore re-including one of them.
    pluggy = root / "pluggy"
    (pluggy / "testing" / ".gitignore").write_text("!keep.log\n")
    (pluggy / "testing" / "keep.log").write_text("def kept(): pass\n")
    (pluggy / "testing" / "drop.log").write_text("def dropped(): pass\n")
    (root / "layouts").mkdir()
    with mcp_session(root) as session:
        yield Walks(root, session)


# -- what git calls visible ---------------------------------------------------------------------


def git_visible_files(top: Path) -> set[str]:
    """Files git shows (tracked, or untracked and not ignored), as ``git ls-files`` lists them."""
    listed = git(top, "ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
    return {path for path in listed.decode("utf-8", "surrogateescape").split("\0") if path}


def git_ignored(top: Path, paths: Iterable[str] | None = None) -> set[str]:
    """The entries git ignores (``git check-ignore``, the index not consulted), each judged by its own rules
    (not ``ls-files --directory``, which also calls a folder ignored when all it holds is)."""
    if paths is None:
        paths = [entry.split(" ", 1)[1] for entry in find_entries(top)]
    listed = "".join(f"{path}\0" for path in paths).encode("utf-8", "surrogateescape")
    done = git(top, "check-ignore", "--no-index", "--stdin", "-z", "-v", "-n", input=listed, check=False)
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    return {path for _source, _line, pattern, path in zip(*[iter(fields)] * 4, strict=False)
            if pattern and not pattern.startswith("!")}


def under(path: str, prefixes: set[str]) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in prefixes)


def tree_paths(listing: str) -> set[str]:
    """``get_tree``'s indented lines as relative paths (folders with a trailing slash)."""
    stack: list[str] = []
    paths: set[str] = set()
    for line in listing.split("\n")[1:]:
        if line.startswith("[..."):
            raise AssertionError("the tree was cut: " + line)
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name = line.strip()
        del stack[depth - 1:]
        stack.append(name.rstrip("/"))
        paths.add("/".join(stack) + ("/" if name.endswith("/") else ""))
    return paths


def withheld(top: Path, world: Walks) -> set[str]:
    """What codeward hides by policy below ``top``: secrets, and links that lead out of the roots."""
    hidden = {name for name in SECRETS if (top / name).exists() and name not in KEY_FILES}
    return hidden | {entry.name for entry in top.iterdir()
                     if entry.is_symlink() and not entry.resolve().is_relative_to(world.root)}


# -- the projects -------------------------------------------------------------------------------


@pytest.mark.parametrize("project", ["iniconfig", "tomli", "pluggy"])
def test_get_tree_shows_what_git_does_not_ignore(world: Walks, project: str) -> None:
    top = world.project(project)
    shown = tree_paths(world.session.text("get_tree", path=project, max_depth=20))
    ignored, hidden = git_ignored(top), withheld(top, world)
    found = [entry.split(" ", 1) for entry in find_entries(top)]
    # A link to a folder shows as a folder, not entered (find, without -L, does not enter it either).
    expected = {path + ("/" if kind == "d" or (kind == "l" and (top / path).is_dir()) else "")
                for kind, path in found if not under(path, ignored) and not under(path, hidden)}
    assert shown == expected
    # The documented difference: secrets and links out of the roots, which find lists, are withheld.
    assert {path for _kind, path in found if path in hidden} == hidden
    assert not any(under(path.rstrip("/"), hidden) for path in shown)


def test_a_nested_gitignore_re_includes_what_the_root_one_ignores(world: Walks) -> None:
    """The reported case: *.log at the root, !keep.log in testing/.gitignore: git, ripgrep and every
    listing show testing/keep.log."""
    top = world.project("pluggy")
    assert {"testing/keep.log"} == {path for path in git_visible_files(top) if path.endswith(".log")}
    assert {"testing/keep.log"} == {path for path in rg(top, "--files", *REFERENCE_SEARCH) if path.endswith(".log")}
    tree = world.session.text("get_tree", path="pluggy/testing", max_depth=1).split("\n")
    assert "  keep.log" in tree and "  drop.log" not in tree
    assert "pluggy/testing/keep.log" in world.session.text("search_files", path="pluggy", pattern="*.log").split("\n")
    rows = world.session.text("list_directory", path="pluggy/testing").split("\n")
    assert any(row.startswith("[file] keep.log  ") and not row.endswith("(ignored)") for row in rows)
    assert any(row.startswith("[file] drop.log  ") and row.endswith("(ignored)") for row in rows)


@pytest.mark.parametrize("project", ["iniconfig", "pluggy"])
def test_search_files_lists_what_git_ls_files_lists(world: Walks, project: str) -> None:
    top = world.project(project)
    found = world.session.text("search_files", path=project, pattern="*").split("\n")
    shown = {path.removeprefix(project + "/") for path in found}
    # git lists a link as a file; search_files lists links to files (and dangling ones) and not links to
    # folders, which it treats as the folders they are.
    expected = {path for path in git_visible_files(top)
                if not under(path, withheld(top, world)) and not (top / path).is_dir()}
    assert shown == expected
    python = {path.removeprefix(project + "/")
              for path in world.session.text("search_files", path=project, pattern="*.py").split("\n")}
    assert python == {path for path in expected if fnmatch.fnmatch(path.rsplit("/", 1)[-1], "*.py")}


def test_an_include_glob_never_brings_back_an_ignored_file(world: Walks) -> None:
    """ripgrep lets --glob override the ignore files; codeward's globs only narrow (as search_files does)."""
    top = world.project("iniconfig")
    assert "src/iniconfig/_version.py" in rg(top, "--files", "--glob", "*.py")
    assert "src/iniconfig/_version.py" not in rg(top, "--files")
    assert "src/iniconfig/_version.py" not in git_visible_files(top)
    assert "import" in (top / "src/iniconfig/_version.py").read_text()
    files = {hit["path"] for hit in world.session.data("search_text", pattern="import", path="iniconfig",
                                                       glob=["*.py"], mode="files")["files"]}
    assert files and "iniconfig/src/iniconfig/_version.py" not in files
    assert files == {path for path in world.session.text("search_files", path="iniconfig", pattern="*.py").split("\n")
                     if "import" in (world.root / path).read_text()}


def test_search_files_with_ignored_files_lists_what_find_finds(world: Walks) -> None:
    top = world.project("tomli")
    found = {path.removeprefix("tomli/") for path in
             world.session.text("search_files", path="tomli", pattern="*", include_ignored=True).split("\n")}
    assert found == {entry.split(" ", 1)[1] for entry in find_entries(top, "-type", "f")}


@pytest.mark.parametrize("folder", ["iniconfig", "pluggy/testing", "tomli/src/tomli", "iniconfig/src"])
def test_list_directory_matches_find_kinds_and_marks_what_git_ignores(world: Walks, folder: str) -> None:
    top = world.root / folder
    rows = {}
    for row in world.session.text("list_directory", path=folder).split("\n")[1:]:
        found = re.fullmatch(r"\[(dir|file|link)\]\s+(.+?)(/|  \d+| -> .*)?(  \(ignored\))?", row)
        assert found is not None, row
        rows[found.group(2)] = (found.group(1), found.group(4) is not None)
    repository = next(parent for parent in (top, *top.parents) if (parent / ".git").is_dir())
    inside = top.relative_to(repository).as_posix()
    ignored = {path.removeprefix(inside + "/") if inside != "." else path for path in git_ignored(repository)}
    expected = {}
    for entry in find_entries(top, "-maxdepth", "1"):
        kind, name = entry.split(" ", 1)
        if name not in withheld(top, world):
            expected[name] = ({"d": "dir", "f": "file", "l": "link"}[kind], name in ignored)
    assert rows == expected


def test_list_directory_shows_links_with_their_targets(world: Walks) -> None:
    rows = world.session.text("list_directory", path="iniconfig").split("\n")
    assert "[link] source_link -> iniconfig/src/" in rows
    assert "[link] readme_link -> iniconfig/README.rst" in rows
    assert "[link] dangling -> iniconfig/no-such-file.txt  (missing)" in rows  # the reported case: not an empty file
    assert not [row for row in rows if "outside" in row or "hunter2" in row]


REFERENCE_SEARCH = ("--no-ignore-dot", "--glob=!.git", "--glob=!.codeward")
"""ripgrep as search_text runs it: git's ignore files only, version control and codeward's state skipped."""


@pytest.mark.parametrize(("pattern", "flags", "arguments"), [
    ("def ", [], {}),
    (r"def \w+_\w+\(", [], {}),
    ("Hook", ["--case-sensitive"], {"case": "sensitive"}),
    ("import", ["--word-regexp"], {"word": True}),
    ("**kwargs", ["--fixed-strings"], {"literal": True}),
])
def test_search_text_matches_ripgrep_line_for_line(world: Walks, pattern: str, flags: list[str],
                                                    arguments: dict[str, object]) -> None:
    expected = []
    for line in rg(world.root, "--line-number", "--column", "--no-heading", "--with-filename", "--sort=path",
                   "--smart-case", *REFERENCE_SEARCH, *flags, "--", pattern, "."):
        path, number, column, body = line.split(":", 3)
        character = len(body.encode()[:int(column) - 1].decode(errors="replace")) + 1  # codeward counts characters
        expected.append(f"{path.removeprefix('./')}:{number}:{character}:{body}")
    got: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = world.session.data("search_text", pattern=pattern, offset=offset, limit=1000, **arguments)
        got += [f"{m['path']}:{m['line']}:{m['column']}:{m['text']}" for m in page["matches"]]
        offset = page["next_offset"]
    assert got == expected and got


def test_secrets_are_found_by_ripgrep_and_withheld_by_search_text(world: Walks) -> None:
    """The documented difference, asserted: ripgrep reads the secrets; search_text never shows them."""
    pattern = "hunter2|PRIVATE KEY|token ="
    assert {path.removeprefix("./") for path in rg(world.root, "--files-with-matches", *REFERENCE_SEARCH, pattern)} \
        == {f"iniconfig/{name}" for name in SECRETS}
    assert world.session.data("search_text", pattern=pattern, mode="files")["files"] == []
    assert "private key" in world.session.refused("read_file", path="iniconfig/deploy_key")
    assert "private key" in world.session.refused("get_file_slice", path="iniconfig/deploy_key", start_line=1,
                                                  end_line=1)


def test_search_text_files_agree_with_ripgrep_and_git_grep(world: Walks) -> None:
    files = {hit["path"] for hit in world.session.data("search_text", pattern="def ", mode="files",
                                                       limit=1000)["files"]}
    with_rg = {path.removeprefix("./") for path in rg(world.root, "--files-with-matches", *REFERENCE_SEARCH, "def ")}
    assert files == with_rg
    for project in ("iniconfig", "tomli", "pluggy"):
        grepped = git(world.project(project), "grep", "-l", "--untracked", "--exclude-standard", "-e", "def ",
                      check=False).stdout
        assert {path for path in files if path.startswith(project + "/")} == \
            {f"{project}/{path}" for path in grepped.decode().split("\n") if path}
    assert "pluggy/testing/keep.log" in files and "pluggy/testing/drop.log" not in files


def test_search_text_counts_and_context_agree_with_ripgrep(world: Walks) -> None:
    counts = {hit["path"]: hit["matches"] for hit in world.session.data(
        "search_text", pattern="self", mode="count", limit=1000)["files"]}
    expected = {}
    for line in rg(world.root, "--count-matches", "--smart-case", *REFERENCE_SEARCH, "--with-filename", "self"):
        path, _, count = line.rpartition(":")
        expected[path.removeprefix("./")] = int(count)
    assert counts == expected
    page = world.session.data("search_text", pattern="class ParseError", path="iniconfig", context=2)
    match = page["matches"][0]
    around = rg(world.root / "iniconfig", "--line-number", "--no-heading", "--no-filename", "-C2", "class ParseError")
    assert [f"{match['line'] - 2 + i}-{text}" for i, text in enumerate(match["before"])] == around[:2]
    assert f"{match['line']}:{match['text']}" == around[2]


def test_a_capped_search_counts_its_files_exactly_and_quotes_the_pattern_as_typed(world: Walks) -> None:
    many = world.root / "layouts" / "many"
    many.mkdir()
    for number in range(84):  # 84 files of 120 matching lines: past the 10,000-line cap
        (many / f"part_{number:02}.txt").write_text("value = 1\n" * 120)
    report = world.session.call("search_text", pattern=r"value\s=", path="layouts/many")
    assert report.structured_content is not None and not report.structured_content["complete"]
    files = len(rg(many, "--files-with-matches", r"value\s="))
    head = report.content[0].text.split("\n")[0]  # type: ignore[union-attr]
    assert files == 84 and head.startswith(f"more than 10,000 matching lines in {files} files for 'value\\s='")
    none = world.session.text("search_files", path="layouts/many", pattern=r"*\.md")
    assert none == r"no files match '*\.md' under layouts/many"


def test_a_tracked_file_an_ignore_rule_matches_is_hidden_as_ripgrep_hides_it(world: Walks) -> None:
    """The documented difference with git: the walkers read ignore files, not git's index."""
    top = world.project("tomli")
    (top / "tracked.log").write_text("def tracked(): pass\n")
    git(top, "add", "-f", "tracked.log")
    assert "tracked.log" in git_visible_files(top)
    assert "tracked.log" not in world.session.text("get_tree", path="tomli")
    assert "tracked.log" not in rg(top, "--files")
    files = world.session.data("search_text", pattern="def tracked", mode="files")["files"]
    assert files == []


def test_global_excludes_and_dot_ignore_files_are_not_read(world: Walks) -> None:
    """The documented difference: core.excludesFile (the user's global excludes, a file outside the
    workspace) and ripgrep's .ignore files are not ignore files for codeward; git and ripgrep read them."""
    top = world.project("tomli")
    excludes = world.outside / "global-excludes"
    excludes.write_text("notes.txt\n")
    (top / "notes.txt").write_text("tomli notes\n")
    (top / "scratch.txt").write_text("tomli scratch\n")
    (top / ".ignore").write_text("scratch.txt\n")
    git(top, "config", "core.excludesFile", str(excludes))
    try:
        assert "notes.txt" not in git_visible_files(top) and "scratch.txt" in git_visible_files(top)
        assert "scratch.txt" not in rg(top, "--files")
        tree = world.session.text("get_tree", path="tomli", max_depth=1).split("\n")
        assert "  notes.txt" in tree and "  scratch.txt" in tree
        files = {hit["path"] for hit in world.session.data("search_text", pattern="tomli", path="tomli",
                                                           mode="files")["files"]}
        assert {"tomli/notes.txt", "tomli/scratch.txt"} <= files
    finally:
        git(top, "config", "--unset", "core.excludesFile")
        for name in (".ignore", "notes.txt", "scratch.txt"):
            (top / name).unlink()


# -- generated ignore layouts -------------------------------------------------------------------

NAMES = ["a", "b", "src", "build", "keep.log", "x.log", "d.py", "lib", ".hidden", "doc.md"]
ATOMS = ["a", "b", "src", "build", "keep.log", "*.log", "*.py", "*", "?", "**", "[ab]", "[!a]*", "lib", "d*",
         ".hidden", "*.md"]


@st.composite
def patterns(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(ATOMS), min_size=1, max_size=3))
    text = "/".join(parts)
    if draw(st.booleans()) and "/" not in text:
        text = "/" + text
    if draw(st.integers(0, 3)) == 0:
        text += "/"
    if draw(st.integers(0, 2)) == 0:
        text = "!" + text
    return text


@st.composite
def layouts(draw: st.DrawFn) -> dict[str, str]:
    """Relative path -> content: files, folders (content None as ''), ignore files at any level."""
    files: dict[str, str] = {}
    folders = [""]
    for _ in range(draw(st.integers(2, 14))):
        parent = draw(st.sampled_from(folders))
        name = draw(st.sampled_from(NAMES))
        path = f"{parent}/{name}" if parent else name
        if path in files or path in folders or any(f.startswith(path + "/") for f in files):
            continue
        if parent.count("/") < 2 and draw(st.booleans()):
            folders.append(path)
        else:
            files[path] = "x\n"
    files = {path: body for path, body in files.items() if path not in folders}
    for folder in folders:
        if draw(st.integers(0, 2)):
            lines = draw(st.lists(patterns(), min_size=1, max_size=4))
            files[f"{folder}/.gitignore" if folder else ".gitignore"] = "\n".join(lines) + "\n"
    if draw(st.integers(0, 3)) == 0:
        files[".git/info/exclude"] = "\n".join(draw(st.lists(patterns(), min_size=1, max_size=2))) + "\n"
    for folder in folders[1:]:
        files.setdefault(f"{folder}/", "")
    return files


@BOUNDED
@given(layout=layouts())
def test_generated_ignore_layouts_list_as_git_lists_them(world: Walks, layout: dict[str, str]) -> None:
    case = f"layouts/case{next(world.counter)}"
    top = world.root / case
    top.mkdir()
    git(top, "init", "-q")
    for path, body in layout.items():
        target = top / path
        if path.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
    expected_files = git_visible_files(top)
    ignored = git_ignored(top)
    context = {path: body for path, body in layout.items() if ".gitignore" in path or "exclude" in path}

    files = world.session.text("search_files", path=case, pattern="*")
    shown = set() if files.startswith("no files match") else {p.removeprefix(case + "/") for p in files.split("\n")}
    assert shown == expected_files, context

    searched = world.session.data("search_text", pattern=".", path=case, mode="files", limit=1000)["files"]
    assert {hit["path"].removeprefix(case + "/") for hit in searched} == expected_files, context

    tree = tree_paths(world.session.text("get_tree", path=case, max_depth=20))
    expected_tree = {path + ("/" if kind == "d" else "") for kind, path in
                     (entry.split(" ", 1) for entry in find_entries(top)) if not under(path, ignored)}
    assert tree == expected_tree, context
    assert set(rg(top, "--files", *REFERENCE_SEARCH)) == expected_files, context


TRICKY = {
    "escapes": ("\\#hash\n\\!bang\ntrailing\\ \nspaces   \n", ["#hash", "!bang", "trailing ", "spaces", "plain"]),
    "classes": ("[[:digit:]]*.txt\n[a-c]?.md\n[!x]y\n[]]z\n", ["1.txt", "a.txt", "b1.md", "d1.md", "ay", "xy", "]z"]),
    "globstars": ("**/deep/**\na/**/b\n/top/*\n**x\n", ["deep/f", "s/deep/t/f", "a/b", "a/m/n/b", "a/c", "top/f",
                                                         "s/top/f", "ax", "x"]),
    "crlf and bom": ("\ufeff*.log\r\n!keep.log\r\n", ["a.log", "keep.log", "b.txt"]),
    "folders only": ("build/\nout\n", ["build/x", "out/y", "sub/build/z", "sub/out", "build_file"]),
}
"""Rules git reads in its own ways: escapes, trailing spaces, classes, globstars, CRLF and a BOM."""


@pytest.mark.parametrize("case", sorted(TRICKY))
def test_tricky_rules_are_read_as_git_reads_them(world: Walks, case: str) -> None:
    rules, paths = TRICKY[case]
    top = world.root / "layouts" / f"tricky{next(world.counter)}"
    top.mkdir(parents=True)
    git(top, "init", "-q")
    (top / ".gitignore").write_bytes(rules.encode())
    for path in paths:
        (top / path).parent.mkdir(parents=True, exist_ok=True)
        (top / path).write_text("x\n")
    # git judges a link as a file: "build/" does not match a link named build, whatever it points to.
    (top / "linked").mkdir()
    (top / "linked" / "build").symlink_to("..", target_is_directory=True)
    case_path = top.relative_to(world.root).as_posix()
    files = world.session.text("search_files", path=case_path, pattern="*", include_ignored=False)
    shown = {path.removeprefix(case_path + "/") for path in files.split("\n")}
    assert shown == git_visible_files(top) - {"linked/build"}, rules  # a link to a folder is no file to list
    searched = world.session.data("search_text", pattern=".", path=case_path, mode="files", limit=1000)["files"]
    assert {hit["path"].removeprefix(case_path + "/") for hit in searched} == shown, rules
    tree = tree_paths(world.session.text("get_tree", path=case_path, max_depth=20))
    ignored = git_ignored(top)
    assert tree == {path + ("/" if kind == "d" or (kind == "l" and (top / path).is_dir()) else "")
                    for kind, path in (entry.split(" ", 1) for entry in find_entries(top))
                    if not under(path, ignored)}, rules


def test_a_hostile_ignore_file_cannot_make_a_walk_slow(world: Walks) -> None:
    """Globstars and stars compiled naively backtrack exponentially (this rule took minutes per path);
    the engine's matching stays polynomial, and still agrees with git."""
    top = world.root / "layouts" / f"hostile{next(world.counter)}"
    deep = top.joinpath(*["a"] * 24)
    deep.mkdir(parents=True)
    (deep / "y").write_text("x\n")
    (deep / "z").write_text("x\n")
    git(top, "init", "-q")
    (top / ".gitignore").write_text("/".join(["**", "a*"] * 12) + "/z\n" + "*a*a*a*a*a*a*a*a*a*a*a*b\n")
    (top / ("a" * 60)).write_text("x\n")
    case = top.relative_to(world.root).as_posix()
    files = {path.removeprefix(case + "/") for path in
             world.session.text("search_files", path=case, pattern="*").split("\n")}
    assert files == git_visible_files(top) and "/".join(["a"] * 24) + "/z" not in files
