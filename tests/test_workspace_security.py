"""The security battery: every way out of the workspace is refused or hidden, and the disk is unchanged."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.result import ErrorKind
from codeward.kernel.workspace import Access, Workspace
from tests.conftest import snapshot

Call = Callable[..., ToolOutcome]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace, full of things tools must never reach."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("top secret\n")
    return directory


@pytest.fixture
def project(root: Path, outside: Path) -> Path:
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "link_file").symlink_to(outside / "secret.txt")
    (root / "link_dir").symlink_to(outside, target_is_directory=True)
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    (root / "inner_link").symlink_to(root / "src" / "main.py")
    nested = root / "deep" / "er"
    nested.mkdir(parents=True)
    for name in ("config.toml", "history.toml", "chat_history.toml", "credentials.toml", ".env", "server.pem",
                 "tls.key", "id_rsa", "id_rsa.pub", "CONFIG.TOML"):
        (nested / name).write_text("protected\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


def _refused(outcome: ToolOutcome, kind: ErrorKind, *fragments: str) -> None:
    assert outcome.is_error, f"expected a refusal, got: {outcome.text}"
    assert outcome.errors[0].kind is kind, outcome.text
    for fragment in fragments:
        assert fragment in outcome.text, f"{fragment!r} not in {outcome.text!r}"
    assert "Hint:" in outcome.text, "every refusal says what to do instead"


ESCAPES = [
    "../outside/secret.txt",
    "../../../../../../etc/passwd",
    "src/../../outside/secret.txt",
    "./src/../../../etc/hostname",
    "/etc/passwd",
    "..\\outside\\secret.txt",
    "src\\..\\..\\outside\\secret.txt",
]


@pytest.mark.parametrize("path", ESCAPES)
def test_paths_escaping_the_root_are_refused_for_reading(project: Path, call: Call, path: str) -> None:
    _refused(call("read_file", path=path), ErrorKind.PERMISSION, "outside the workspace")


@pytest.mark.parametrize("path", ESCAPES)
def test_paths_escaping_the_root_are_refused_for_writing(project: Path, outside: Path, call: Call,
                                                         path: str) -> None:
    before_root, before_out = snapshot(project), snapshot(outside)
    _refused(call("write_file", path=path, content="pwned", overwrite=True), ErrorKind.PERMISSION)
    _refused(call("edit_file", path=path, old_string="top", new_string="pwned"), ErrorKind.PERMISSION)
    _refused(call("set_file_slice", path=path, start_line=1, end_line=1, new_content="pwned"),
             ErrorKind.PERMISSION)
    assert snapshot(project) == before_root and snapshot(outside) == before_out


def test_absolute_path_outside_names_the_roots(project: Path, call: Call) -> None:
    outcome = call("read_file", path="/etc/passwd")
    _refused(outcome, ErrorKind.PERMISSION, str(project.resolve()))


def test_absolute_path_inside_is_fine(project: Path, call: Call) -> None:
    outcome = call("read_file", path=str(project / "src" / "main.py"))
    assert not outcome.is_error and outcome.text == "print('hi')\n"


def test_symlinked_file_pointing_out_is_refused(project: Path, outside: Path, call: Call) -> None:
    before = snapshot(outside)
    _refused(call("read_file", path="link_file"), ErrorKind.PERMISSION, "through a symlink")
    _refused(call("edit_file", path="link_file", old_string="top", new_string="x"), ErrorKind.PERMISSION)
    assert snapshot(outside) == before


def test_symlinked_directory_pointing_out_is_refused(project: Path, outside: Path, call: Call) -> None:
    before = snapshot(outside)
    _refused(call("read_file", path="link_dir/secret.txt"), ErrorKind.PERMISSION, "through a symlink")
    _refused(call("list_directory", path="link_dir"), ErrorKind.PERMISSION)
    _refused(call("write_file", path="link_dir/new.txt", content="x"), ErrorKind.PERMISSION)
    assert snapshot(outside) == before and not (outside / "new.txt").exists()


def test_symlink_inside_the_root_is_followed(project: Path, call: Call) -> None:
    outcome = call("read_file", path="inner_link")
    assert not outcome.is_error and outcome.text == "print('hi')\n"


def test_symlink_loops_are_refused_clearly(project: Path, call: Call) -> None:
    _refused(call("read_file", path="loop_a"), ErrorKind.INVALID_INPUT, "symlink loop")
    _refused(call("write_file", path="loop_b", content="x", overwrite=True), ErrorKind.INVALID_INPUT, "loop")


@pytest.mark.parametrize("path", ["~", "~/.ssh/id_rsa", "~root/.bashrc"])
def test_home_shorthand_is_not_expanded(project: Path, call: Call, path: str) -> None:
    _refused(call("read_file", path=path), ErrorKind.INVALID_INPUT, "'~'")


def test_nul_bytes_are_refused(project: Path, call: Call) -> None:
    _refused(call("read_file", path="src/main.py\x00.txt"), ErrorKind.INVALID_INPUT, "NUL")


def test_five_thousand_character_paths_are_refused(project: Path, call: Call) -> None:
    before = snapshot(project)
    _refused(call("read_file", path="a/" * 2500), ErrorKind.INVALID_INPUT, "5000 characters")
    _refused(call("write_file", path="b" * 5000, content="x"), ErrorKind.INVALID_INPUT)
    assert snapshot(project) == before


def test_overlong_path_component_is_refused(project: Path, call: Call) -> None:
    _refused(call("write_file", path="x" * 300, content="x"), ErrorKind.INVALID_INPUT, "255 bytes")


@pytest.mark.parametrize("path", ["\uff0e\uff0e/outside/secret.txt", "\u2024\u2024/\u2024\u2024/etc/passwd",
                                  "..\uff0foutside/secret.txt", "src/\u2025/\u2025/etc/passwd"])
def test_unicode_look_alikes_of_dots_and_slashes_are_refused(project: Path, call: Call, path: str) -> None:
    _refused(call("read_file", path=path), ErrorKind.INVALID_INPUT, "look-alike")


def test_unicode_names_that_are_not_look_alikes_stay_inside(project: Path, call: Call) -> None:
    # U+2215 DIVISION SLASH is no separator: the whole string is one (missing) file name in the root.
    outcome = call("read_file", path="..\u2215outside\u2215secret.txt")
    _refused(outcome, ErrorKind.NOT_FOUND, "not found")


@pytest.mark.parametrize("path", ["C:\\Windows\\system32", "c:/Users", "\\\\server\\share\\x", "//server/share"])
def test_windows_drive_and_unc_paths_are_refused(project: Path, call: Call, path: str) -> None:
    _refused(call("read_file", path=path), ErrorKind.INVALID_INPUT, "Windows")


def test_windows_separators_inside_the_root_work(project: Path, call: Call) -> None:
    outcome = call("read_file", path="src\\main.py")
    assert not outcome.is_error and outcome.text == "print('hi')\n"


@pytest.mark.parametrize("name", ["config.toml", "history.toml", "chat_history.toml", "credentials.toml", ".env",
                                  "server.pem", "tls.key", "id_rsa", "id_rsa.pub", "CONFIG.TOML"])
def test_blacklisted_names_in_nested_folders_are_refused(project: Path, call: Call, name: str) -> None:
    before = snapshot(project)
    _refused(call("read_file", path=f"deep/er/{name}"), ErrorKind.PERMISSION)
    _refused(call("edit_file", path=f"deep/er/{name}", old_string="protected", new_string="x"),
             ErrorKind.PERMISSION)
    assert snapshot(project) == before


def test_symlink_with_innocent_name_to_a_blacklisted_file_is_refused(project: Path, call: Call) -> None:
    (project / "innocent.txt").symlink_to(project / "deep" / "er" / "credentials.toml")
    _refused(call("read_file", path="innocent.txt"), ErrorKind.PERMISSION, "credentials.toml")


def test_creating_a_blacklisted_file_is_refused(project: Path, call: Call) -> None:
    _refused(call("write_file", path="new/.env", content="TOKEN=1"), ErrorKind.PERMISSION)
    assert not (project / "new").exists()


def test_writes_into_git_are_refused_but_reads_work(project: Path, call: Call) -> None:
    before = snapshot(project)
    assert call("read_file", path=".git/HEAD").text == "ref: refs/heads/main\n"
    _refused(call("edit_file", path=".git/HEAD", old_string="main", new_string="evil"), ErrorKind.PERMISSION,
             ".git/")
    _refused(call("write_file", path=".git/hooks/pre-commit", content="rm -rf /"), ErrorKind.PERMISSION)
    assert snapshot(project) == before


def test_listings_hide_outside_looping_and_blacklisted_entries(project: Path, call: Call) -> None:
    listing = call("list_directory", path=".").text
    assert "src/" in listing and "inner_link" in listing
    for hidden in ("link_file", "link_dir", "loop_a", "loop_b", ".git"):
        assert hidden not in listing, hidden
    nested = call("list_directory", path="deep/er").text
    assert "protected" not in nested and "config.toml" not in nested and ".env" not in nested
    assert "is empty" in nested


def test_searches_and_trees_never_reveal_outside_entries(project: Path, call: Call) -> None:
    found = call("search_files", path=".", pattern="*").text
    tree = call("get_tree", path=".", max_depth=5).text
    for text in (found, tree):
        assert "secret" not in text and "link_dir" not in text and "link_file" not in text
        assert "id_rsa" not in text and "credentials" not in text and "loop_" not in text
    assert "src/main.py" in found and "main.py" in tree


def test_wrong_types_for_paths_name_the_field(project: Path, call: Call) -> None:
    outcome = call("read_file", path=["src/main.py"])
    _refused(outcome, ErrorKind.INVALID_INPUT, "'path'", "a string")
    _refused(call("read_file", path=""), ErrorKind.INVALID_INPUT, "empty")


def test_missing_file_and_directory_mixups_are_clear(project: Path, call: Call) -> None:
    _refused(call("read_file", path="nope.txt"), ErrorKind.NOT_FOUND, "nope.txt")
    _refused(call("read_file", path="src"), ErrorKind.INVALID_INPUT, "directory")
    _refused(call("list_directory", path="src/main.py"), ErrorKind.INVALID_INPUT, "not a directory")


def test_two_workspaces_side_by_side_in_one_process(tmp_path: Path, catalog: Catalog) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    for directory in (first, second):
        directory.mkdir()
        (directory / "who.txt").write_text(directory.name)
    contexts = {"one": ToolContext(Workspace.create([first])), "two": ToolContext(Workspace.create([second]))}
    results: dict[str, list[str]] = {"one": [], "two": []}
    errors: list[str] = []

    def worker(name: str) -> None:
        other = "two" if name == "one" else "one"
        for _ in range(50):
            results[name].append(catalog.call("read_file", {"path": "who.txt"}, contexts[name]).text)
            escaped = catalog.call("read_file", {"path": str(tmp_path / other / "who.txt")}, contexts[name])
            if not escaped.is_error:
                errors.append(f"{name} read {other}'s file")

    threads = [threading.Thread(target=worker, args=(name,)) for name in ("one", "two") for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert set(results["one"]) == {"one"} and set(results["two"]) == {"two"}


def test_tracked_files_outside_the_roots_can_be_allowed_explicitly(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    narrowed = Workspace.create([root]).with_files([outside / "secret.txt"])
    assert narrowed.resolve(str(outside / "secret.txt")).ok
    assert not narrowed.resolve(str(outside / "other.txt")).ok


def test_configured_blacklist_globs_apply(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "db.txt").write_text("pw")
    workspace = Workspace.create([root], extra_blacklist=["secrets/"])
    outcome = workspace.resolve("secrets/db.txt")
    assert not outcome.ok and outcome.errors[0].kind is ErrorKind.PERMISSION
    assert workspace.resolve("other.txt", Access.WRITE).ok


def test_root_itself_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a directory"):
        Workspace.create([tmp_path / "missing"])



def test_a_gitignore_pointing_outside_is_not_read(root: Path, outside: Path, call: Call) -> None:
    # Its patterns would reveal the outside file line by line through what they hide.
    (outside / "patterns").write_text("guess_*.txt\n")
    (root / ".gitignore").symlink_to(outside / "patterns")
    (root / "guess_a.txt").write_text("")
    sub = root / "sub"
    sub.mkdir()
    (sub / ".gitignore").symlink_to("/dev/zero")  # read whole, this ate all memory
    (sub / "kept.txt").write_text("")
    tree = call("get_tree", path=".").text
    assert "guess_a.txt" in tree and "kept.txt" in tree


def test_lone_surrogates_in_paths_are_refused_clearly(project: Path, call: Call) -> None:
    before = snapshot(project)
    for tool, extra in (("read_file", {}), ("write_file", {"content": "x"}), ("list_directory", {})):
        _refused(call(tool, path="src/\ud800.py", **extra), ErrorKind.INVALID_INPUT, "lone UTF-16 surrogate")
    assert snapshot(project) == before


@pytest.mark.parametrize("name", [".ENV", "Server.PEM", "deploy.Key", "ID_RSA", ".Env.local"])
def test_secret_globs_ignore_case_as_macos_and_windows_do(project: Path, call: Call, name: str) -> None:
    (project / name).write_text("protected\n")  # on a case-insensitive disk this *is* .env, server.pem ...
    before = snapshot(project)
    _refused(call("read_file", path=name), ErrorKind.PERMISSION, "blacklisted")
    _refused(call("write_file", path=name, content="x", overwrite=True), ErrorKind.PERMISSION, "blacklisted")
    assert name not in call("list_directory", path=".").text
    assert snapshot(project) == before


@pytest.mark.parametrize("folder", [".GIT", ".Git", ".g\u200cit"])
def test_git_folder_spelled_otherwise_is_still_not_writable(project: Path, call: Call, folder: str) -> None:
    # On macOS these open .git: writing its config (core.fsmonitor, hooks) runs code at the next git command.
    before = snapshot(project)
    _refused(call("write_file", path=f"{folder}/config", content="[core]\n\tfsmonitor = evil\n"),
             ErrorKind.PERMISSION, ".git/")
    assert snapshot(project) == before


def test_a_folder_swapped_for_a_symlink_after_resolving_is_not_used(root: Path, outside: Path) -> None:
    from codeward.engines.files.textfile import read_text, write_text

    workspace = Workspace.create([root])
    (root / "sub").mkdir()
    (root / "sub" / "secret.txt").write_text("inside\n")
    real = workspace.resolve("sub/secret.txt", Access.WRITE).data
    loaded = read_text(real, "sub/secret.txt", workspace).data
    # What a racing process (a script run in parallel) does between resolving and opening:
    (root / "sub").rename(root / "was_sub")
    (root / "sub").symlink_to(outside, target_is_directory=True)
    written = write_text(real, loaded, "overwritten\n", "sub/secret.txt", workspace)
    assert not written.ok and "changed while being written" in written.error_text()
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    read = read_text(real, "sub/secret.txt", workspace)
    assert not read.ok and "changed while being opened" in read.error_text() and "top secret" not in str(read)


def test_a_resource_read_checks_what_it_opened(root: Path, outside: Path) -> None:
    from codeward.engines.files.textfile import read_checked
    from codeward.serving.file_content import MAX_RESOURCE_BYTES, file_uri
    from codeward.serving.file_resources import FileResources

    workspace = Workspace.create([root])
    (root / "sub").mkdir()
    (root / "sub" / "data.bin").write_bytes(b"\x00inside")
    real = workspace.resolve("sub/data.bin").data
    assert read_checked(real, "sub/data.bin", workspace, limit=100, reader="resources", hint="").data == b"\x00inside"
    # A racing process swaps the folder for a symlink between resolving and opening:
    (root / "sub").rename(root / "was_sub")
    (root / "sub").symlink_to(outside, target_is_directory=True)
    (outside / "data.bin").write_bytes(b"top secret")
    read = read_checked(real, "sub/data.bin", workspace, limit=100, reader="resources", hint="")
    assert not read.ok and "changed while being opened" in read.error_text() and read.data == b""

    huge = root / "huge.log"
    with huge.open("wb") as handle:
        handle.truncate(MAX_RESOURCE_BYTES + 1)
    refused = FileResources().read(file_uri(huge), workspace)
    assert not refused.ok and refused.errors[0].kind is ErrorKind.TOO_LARGE
    assert f"resources read files up to {MAX_RESOURCE_BYTES:,} bytes" in refused.error_text()
    assert "read_file" in refused.error_text()
