"""apply_patch against ``git apply``: real diffs of real projects, and generated edits, byte for byte.

Each case makes a diff with git itself (``git diff`` of a change to a project, or ``git diff
--no-index`` of two generated texts), then applies it twice — with ``git apply`` to one copy and
with ``apply_patch`` through the official client to another — and compares the trees. A patch git
refuses, codeward refuses too, whole, changing nothing.
"""

from __future__ import annotations

import itertools
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.differential.support import BOUNDED, World, git, git_init, mcp_session, tree_digest, unpack

pytestmark = pytest.mark.xdist_group("differential-patches")
"""One worker runs the module: its tests share one server (made once, not once per worker)."""


class Patches(World):
    """The server's root is one folder that each case fills with a fresh copy of a project (a git
    repository), so that ``git diff``'s paths are paths of the workspace as they are."""

    @property
    def scratch(self) -> Path:
        """Where git applies the same patches, and generated diffs are made."""
        return self.root.parent / "scratch"

    def fresh(self, name: str, prepare: Callable[[Path], object] | None = None) -> Path:
        """The workspace emptied (but for codeward's own state) and filled with the project, ``prepare``'s
        changes committed."""
        for entry in self.root.iterdir():
            if entry.name != ".codeward":
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        unpacked = unpack(name, self.scratch / f"unpacked{next(self.counter)}")
        for entry in unpacked.iterdir():
            entry.rename(self.root / entry.name)
        if prepare is not None:
            prepare(self.root)
        (self.root / ".gitignore").write_text(".codeward/\n")
        git_init(self.root)
        return self.root


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Patches]:
    base = tmp_path_factory.mktemp("patches")
    root, scratch = base / "workspace", base / "scratch"
    root.mkdir()
    scratch.mkdir()
    with mcp_session(root) as session:
        yield Patches(root, session)


def diff_of(top: Path, change: Callable[[Path], object], *options: str) -> str:
    """``git diff`` of ``change`` (new files included); the work tree is then put back to the last commit."""
    change(top)
    git(top, "add", "-A")
    patch = git(top, "diff", "--cached", "--no-color", *options).stdout.decode("utf-8", "surrogateescape")
    git(top, "reset", "-q", "--hard")
    return patch


def state(top: Path) -> str:
    return tree_digest(top, skip=(".git", ".codeward"))


def both_apply(world: Patches, top: Path, patch: str) -> None:
    """git apply on a copy and apply_patch through the client leave the same tree."""
    reference = world.scratch / f"git{next(world.counter)}"
    shutil.copytree(top, reference, symlinks=True, ignore=shutil.ignore_patterns(".codeward"))
    git(reference, "apply", input=patch.encode("utf-8", "surrogateescape"))
    world.session.ok("apply_patch", patch=patch)
    assert state(top) == state(reference)


def both_refuse(world: Patches, top: Path, patch: str, words: str) -> None:
    """git apply --check and apply_patch both refuse; nothing changes."""
    before = state(top)
    assert git(top, "apply", "--check", input=patch.encode("utf-8", "surrogateescape"), check=False).returncode != 0
    assert words in world.session.refused("apply_patch", patch=patch)
    assert state(top) == before


# -- real diffs of real projects ------------------------------------------------------------------


def _rename_function(top: Path) -> None:
    for path in (top / "src" / "tomli").glob("*.py"):
        text = path.read_text()
        path.write_text(text.replace("ParseFloat", "FloatParser"))


def test_a_multi_file_refactoring_applies_as_git_applies_it(world: Patches) -> None:
    top = world.fresh("tomli")
    patch = diff_of(top, _rename_function)
    assert patch.count("diff --git") >= 3 and "FloatParser" in patch
    both_apply(world, top, patch)


def _to_crlf(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))


def test_a_crlf_file_applies_as_git_applies_it(world: Patches) -> None:
    top = world.fresh("iniconfig", lambda top: _to_crlf(top / "src" / "iniconfig" / "_parse.py"))
    patch = diff_of(top, lambda top: (top / "src" / "iniconfig" / "_parse.py").write_bytes(
        (top / "src" / "iniconfig" / "_parse.py").read_bytes().replace(b"ParseError", b"IniParseError")))
    assert "\r\n" in patch
    both_apply(world, top, patch)
    assert b"IniParseError" in (top / "src" / "iniconfig" / "_parse.py").read_bytes()
    assert b"\n" not in (top / "src" / "iniconfig" / "_parse.py").read_bytes().replace(b"\r\n", b"")


def test_a_file_mixing_lf_and_crlf_applies_as_git_applies_it(world: Patches) -> None:
    """The reported case: a hunk changing a CRLF line of a file that also has LF lines."""
    def mix(top: Path) -> None:
        path = top / "example.ini"
        lines = path.read_bytes().split(b"\n")
        path.write_bytes(b"\n".join(line + b"\r" if number % 2 else line for number, line in enumerate(lines)))

    top = world.fresh("iniconfig", mix)
    original = (top / "example.ini").read_bytes()
    assert b"\r\n" in original and re.search(rb"[^\r]\n", original)
    patch = diff_of(top, lambda top: (top / "example.ini").write_bytes(original.replace(b"=", b" = ")))
    both_apply(world, top, patch)
    assert (top / "example.ini").read_bytes() == original.replace(b"=", b" = ")


def test_the_reported_mixed_ending_hunk(world: Patches) -> None:
    top = world.fresh("tomli", lambda top: (top / "f.txt").write_bytes(b"a\nb\r\nc\n"))
    both_apply(world, top, diff_of(top, lambda top: (top / "f.txt").write_bytes(b"a\nB\r\nc\n")))
    assert (top / "f.txt").read_bytes() == b"a\nB\r\nc\n"


def test_final_newlines_added_and_removed_apply_as_git_applies_them(world: Patches) -> None:
    top = world.fresh("tomli", lambda top: (top / "LICENSE").write_bytes((top / "LICENSE").read_bytes().rstrip()))
    added = diff_of(top, lambda top: (top / "LICENSE").write_bytes((top / "LICENSE").read_bytes() + b"\n"))
    assert "\\ No newline at end of file" in added
    both_apply(world, top, added)
    git(top, "commit", "-q", "-a", "-m", "a final newline")
    removed = diff_of(top, lambda top: (top / "LICENSE").write_bytes((top / "LICENSE").read_bytes().rstrip()))
    assert "\\ No newline at end of file" in removed
    both_apply(world, top, removed)
    assert not (top / "LICENSE").read_bytes().endswith(b"\n")


def test_creations_deletions_and_renames_apply_as_git_applies_them(world: Patches) -> None:
    def change(top: Path) -> None:
        (top / "docs" / "notes").mkdir(parents=True)
        (top / "docs" / "notes" / "design.md").write_text("# Design\n\nSmall and fast.\n")
        (top / "README.md").unlink()
        (top / "src" / "tomli" / "_re.py").rename(top / "src" / "tomli" / "_regexes.py")
        text = (top / "src" / "tomli" / "_types.py").read_text()
        (top / "src" / "tomli" / "_types.py").rename(top / "src" / "tomli" / "types_.py")
        (top / "src" / "tomli" / "types_.py").write_text(text + "\n# moved\n")

    top = world.fresh("tomli")
    patch = diff_of(top, change, "-M")
    for header in ("new file mode", "deleted file mode", "rename from src/tomli/_re.py", "similarity index 100%",
                   "rename to src/tomli/types_.py"):
        assert header in patch, header
    both_apply(world, top, patch)
    assert not (top / "src" / "tomli" / "_re.py").exists() and (top / "docs" / "notes" / "design.md").exists()


def test_a_binary_change_is_refused_whole(world: Patches) -> None:
    def change(top: Path) -> None:
        (top / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x01")
        (top / "LICENSE").write_text("changed\n")

    top = world.fresh("tomli")
    plain = diff_of(top, change)
    assert "Binary files" in plain
    both_refuse(world, top, plain, "binary")
    full = diff_of(top, change, "--binary")
    assert "GIT binary patch" in full
    assert git(top, "apply", "--check", input=full.encode()).returncode == 0
    # The documented difference: git applies a full binary patch; apply_patch applies text only.
    before = state(top)
    assert "binary" in world.session.refused("apply_patch", patch=full)
    assert state(top) == before


def test_a_stale_patch_is_refused_whole(world: Patches) -> None:
    top = world.fresh("tomli")
    patch = diff_of(top, _rename_function)
    changed = [line.split(" b/", 1)[1] for line in patch.split("\n") if line.startswith("diff --git")]
    assert len(changed) >= 2
    stale = top / changed[-1]  # the last file moved on since the diff: the first may not be applied either
    stale.write_text(stale.read_text().replace("ParseFloat", "ParseFloatNow"))
    git(top, "commit", "-q", "-a", "-m", "moved on")
    both_refuse(world, top, patch, "does not apply")


# -- generated edits --------------------------------------------------------------------------------

LINE = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n\r\x00"), max_size=12)


@st.composite
def texts(draw: st.DrawFn) -> tuple[list[str], str, bool]:
    """Lines, their ending style (LF, CRLF or mixed), whether the last one ends."""
    lines = draw(st.lists(LINE, min_size=1, max_size=12))
    return lines, draw(st.sampled_from(["\n", "\r\n", "mixed"])), draw(st.booleans())


def render(lines: list[str], style: str, final: bool, seed: int = 0) -> bytes:
    out = []
    for number, line in enumerate(lines):
        ending = ("\r\n" if (number + seed) % 3 == 0 else "\n") if style == "mixed" else style
        out.append(line + (ending if number < len(lines) - 1 or final else ""))
    return "".join(out).encode()


@st.composite
def edits(draw: st.DrawFn) -> tuple[bytes, bytes]:
    lines, style, final = draw(texts())
    new = list(lines)
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, len(new)))
        end = draw(st.integers(start, min(len(new), start + 3)))
        new[start:end] = draw(st.lists(LINE, max_size=3))
    old_bytes = render(lines, style, final)
    new_final = draw(st.booleans()) if draw(st.integers(0, 3)) == 0 else final
    return old_bytes, render(new, style, new_final) if new else b""


@BOUNDED
@given(change=edits())
def test_generated_edits_apply_as_git_applies_them(world: Patches, change: tuple[bytes, bytes]) -> None:
    old, new = change
    case = world.scratch / f"edit{next(world.counter)}"
    case.mkdir()
    (case / "old").write_bytes(old)
    (case / "new").write_bytes(new)
    made = git(case, "diff", "--no-index", "--no-color", "--", "old", "new", check=False)
    if made.returncode == 0:
        return  # no change: nothing to apply
    patch = made.stdout.decode("utf-8", "surrogateescape")
    headers = re.compile(r"^(diff --git |--- |\+\+\+ ).*$", re.MULTILINE)

    def named(path: str) -> str:
        return headers.sub(lambda m: {"diff --git ": f"diff --git a/{path} b/{path}", "--- ": f"--- a/{path}",
                                      "+++ ": f"+++ b/{path}"}[m.group(1)], patch)

    (case / "f").write_bytes(old)
    git(case, "apply", input=named("f").encode())
    target = world.root / "generated" / f"{case.name}.txt"
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(old)
    world.session.ok("apply_patch", patch=named(f"generated/{case.name}.txt"))
    assert target.read_bytes() == (case / "f").read_bytes() == new
    # The same patch once more, on the changed file: both refuse it, or both apply it alike.
    by_git = git(case, "apply", input=named("f").encode(), check=False).returncode == 0
    by_codeward = not world.session.call("apply_patch", patch=named(f"generated/{case.name}.txt")).is_error
    if by_git and not by_codeward:
        # The one documented difference: git compares bytes, so an old last line without a newline ('0')
        # matches the start of a longer line ('0\n0' then becomes '0\n00'); codeward compares whole lines.
        assert _old_side_ends_without_newline(patch), patch
        return
    assert by_git == by_codeward
    assert target.read_bytes() == (case / "f").read_bytes()


def _old_side_ends_without_newline(patch: str) -> bool:
    lines = patch.split("\n")
    return any(marker.startswith("\\ No newline") and before[:1] in (" ", "-")
               for before, marker in itertools.pairwise(lines))
