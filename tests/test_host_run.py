"""Files the person's tools run later: which paths they are, what the gate says, who is asked.

The red-team suite (``tests/redteam/test_host_run_paths.py``) attacks through real servers; these
check the pieces on their own: the list (built-in, configured, each repository's
``core.hooksPath`` read with the hardened git), the verdict every writer gets, the consent a
person's yes gives, and the approval layers asking with the diff whatever ``auto_approve`` says.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from codeward.approval.host_run import HostRunApproval
from codeward.approval.policy import Approval, ApprovalPolicy, ApprovalRequest
from codeward.config import load_config
from codeward.kernel.catalog import Catalog
from codeward.kernel.chain import chain
from codeward.kernel.context import ToolContext
from codeward.kernel.host_run import EVERY_WRITE, NEEDS_PERSON, Consent
from codeward.kernel.result import ErrorKind
from codeward.kernel.surface import CatalogSurface
from codeward.kernel.workspace import Access, Workspace
from codeward.serving.stack import workspace_for
from tests.conftest import snapshot
from tests.sandbox_support import bwrap_works

pytestmark = pytest.mark.anyio


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"})


@pytest.mark.parametrize("rel", [
    ".githooks/pre-commit", ".husky/pre-push", ".husky", ".pre-commit-config.yaml", ".gitmodules", ".gitattributes",
    "lib/.gitattributes", ".vscode/tasks.json", ".VSCode/tasks.json", "sub/project/.vscode/settings.json",
    ".idea/workspace.xml", ".devcontainer/devcontainer.json", ".devcontainer.json", ".mcp.json", ".MCP.json",
    ".cursor/mcp.json", ".claude/settings.json", ".gitconfig", ".bashrc", ".zshrc", ".profile", ".bash_profile",
    ".beads/hooks/on_create",
])
def test_the_built_in_list_matches_at_any_depth_in_any_case(workspace: Workspace, root: Path, rel: str) -> None:
    verdict = workspace.write_verdict(root / rel)
    assert verdict.needs_person.startswith("a file the host runs later — ") and not verdict.refused
    refused = workspace.resolve(rel, Access.WRITE)
    assert refused.errors[0].kind is ErrorKind.PERMISSION and refused.errors[0].source == NEEDS_PERSON
    assert "needs a person's approval" in refused.errors[0].message and "approve" in refused.errors[0].hint
    assert workspace.resolve(rel, Access.READ).ok  # reading them is fine


@pytest.mark.parametrize("rel", ["src/app.py", "vscode/tasks.json", "docs/.vscode.md", "githooks/x", "mcp.json",
                                 ".github/workflows/ci.yml", "Makefile"])
def test_ordinary_files_are_ordinary(workspace: Workspace, root: Path, rel: str) -> None:
    assert workspace.write_verdict(root / rel).reason == ""
    assert workspace.resolve(rel, Access.WRITE).ok


def test_git_metadata_stays_refused_whatever_a_person_approved(workspace: Workspace, root: Path) -> None:
    approved = workspace.with_host_run_consent(EVERY_WRITE)
    verdict = approved.write_verdict(root / ".git/hooks/pre-commit")
    assert verdict.refused and not verdict.needs_person
    assert approved.resolve(".githooks/pre-commit", Access.WRITE).ok
    assert not approved.resolve(".codeward/x", Access.WRITE).ok


def test_a_consent_for_paths_covers_them_what_is_under_them_and_their_folders(workspace: Workspace,
                                                                              root: Path) -> None:
    approved = workspace.with_host_run_consent(Consent(paths=frozenset({root / ".husky/pre-commit"})))
    assert approved.resolve(".husky/pre-commit", Access.WRITE).ok
    assert approved.resolve(".husky", Access.WRITE).ok  # the folder it is written into
    assert approved.resolve(".husky/pre-push", Access.WRITE).errors[0].source == NEEDS_PERSON
    assert approved.resolve(".vscode/x", Access.WRITE).errors[0].source == NEEDS_PERSON


def test_the_configuration_adds_globs_and_a_project_cannot_take_the_users_away(root: Path, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch
                                                                               ) -> None:
    user = tmp_path / "xdg" / "codeward" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[server]\nhost_run_paths = [".github/workflows/"]\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (root / "codeward.toml").write_text('[server]\nhost_run_paths = ["Makefile"]\n')
    config = load_config(cwd=root)
    assert config.server.host_run_paths == (".github/workflows/", "Makefile")
    workspace = workspace_for(config, [root])
    for rel in (".github/workflows/ci.yml", "sub/Makefile", "MAKEFILE", ".vscode/x"):
        assert workspace.resolve(rel, Access.WRITE).errors[0].source == NEEDS_PERSON, rel
    assert "listed in [server] host_run_paths" in workspace.write_verdict(root / "Makefile").needs_person


def test_the_folder_core_hooks_path_names_is_read_with_the_hardened_git(root: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    git(root, "init", "-q")
    git(root, "config", "core.hooksPath", "tools/hooks")
    nested = root / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    git(nested, "config", "core.hooksPath", "ci-hooks")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[core]\n\thooksPath = ~/.git-hooks\n")  # the person's own, outside the roots
    monkeypatch.setenv("HOME", str(home))
    workspace = workspace_for(load_config(cwd=root), [root])
    hooks = workspace.write_verdict(root / "tools/hooks/pre-commit").needs_person
    assert "core.hooksPath = tools/hooks" in hooks
    assert workspace.write_verdict(root / "tools/hooks").needs_person  # making the folder
    assert "core.hooksPath = ci-hooks" in workspace.write_verdict(nested / "ci-hooks/pre-push").needs_person
    assert workspace.write_verdict(root / "tools/build.sh").reason == ""
    assert workspace.write_verdict(root / "ci-hooks/x").reason == ""  # the nested repository's folder is its own
    git(root, "config", "--unset", "core.hooksPath")  # the person changes it: the answer follows
    fresh = workspace_for(load_config(cwd=root), [root])
    assert fresh.write_verdict(root / "tools/hooks/pre-commit").reason == ""


def test_a_planted_hooks_path_value_runs_nothing_when_read(root: Path, tmp_path: Path) -> None:
    """Reading the configuration runs nothing it names, whatever the repository's config holds."""
    git(root, "init", "-q")
    marker = tmp_path / "ran"
    with open(root / ".git" / "config", "a") as config:
        config.write(f"[core]\n\tfsmonitor = touch {marker}; false\n\thooksPath = $(touch {marker})\n"
                     f"[include]\n\tpath = {tmp_path / 'missing.inc'}\n")
    workspace = workspace_for(load_config(cwd=root), [root])
    assert workspace.write_verdict(root / "src/x.py").reason == ""
    assert "core.hooksPath" in workspace.write_verdict(root / f"$(touch {marker})/x").needs_person
    assert not marker.exists()


def catalog_surface(catalog: Catalog, asked: list[ApprovalRequest], answer: bool, *,
                    policy: ApprovalPolicy | None = None, native: bool = True) -> Any:
    async def person(request: ApprovalRequest) -> bool:
        asked.append(request)
        return answer

    layers: list[Any] = []
    if policy is not None:
        layers.append(Approval(policy, person, catalog=catalog, native=native))
    layers.append(HostRunApproval(person, catalog))
    return chain(CatalogSurface(catalog), layers)


async def test_a_write_is_asked_about_with_its_diff_and_a_no_changes_nothing(root: Path, catalog: Catalog,
                                                                             ctx: ToolContext) -> None:
    asked: list[ApprovalRequest] = []
    before = snapshot(root)
    surface = catalog_surface(catalog, asked, False, policy=ApprovalPolicy(auto_approve=("*",)))
    outcome = await surface.call("write_file", {"path": ".mcp.json", "content": '{"mcpServers": {}}'}, ctx)
    assert outcome.is_error and "was not approved, so nothing was written" in outcome.text
    assert snapshot(root) == before and len(asked) == 1  # auto_approve answered for the call, not for this
    assert asked[0].preview is not None and "+++ b/.mcp.json" in asked[0].preview.text
    assert "MCP client's server list" in asked[0].description


async def test_a_yes_writes_and_a_prompt_that_showed_the_diff_is_not_repeated(root: Path, catalog: Catalog,
                                                                              ctx: ToolContext) -> None:
    asked: list[ApprovalRequest] = []
    surface = catalog_surface(catalog, asked, True)
    written = await surface.call("write_file", {"path": ".githooks/pre-commit", "content": "exit 0\n"}, ctx)
    assert not written.is_error and (root / ".githooks/pre-commit").read_text() == "exit 0\n"
    assert len(asked) == 1
    asked.clear()
    asking = catalog_surface(catalog, asked, True, policy=ApprovalPolicy())  # nothing approved in advance
    edited = await asking.call("edit_file", {"path": ".githooks/pre-commit", "old_string": "exit 0",
                                             "new_string": "exit 1"}, ctx)
    assert not edited.is_error and len(asked) == 1  # the call's own prompt showed this diff
    assert asked[0].preview is not None and "+exit 1" in asked[0].preview.text


async def test_a_call_the_person_typed_is_theirs(root: Path, catalog: Catalog, ctx: ToolContext) -> None:
    """``codeward call``: the person typed it, as they would type ``git_commit`` — nobody is asked."""
    asked: list[ApprovalRequest] = []
    surface = catalog_surface(catalog, asked, False, policy=ApprovalPolicy(), native=False)
    outcome = await surface.call("write_file", {"path": ".vscode/settings.json", "content": "{}"}, ctx)
    assert not outcome.is_error and asked == [] and (root / ".vscode/settings.json").exists()


async def test_without_the_approval_layer_a_host_run_write_is_simply_refused(root: Path, catalog: Catalog,
                                                                            ctx: ToolContext) -> None:
    outcome = catalog.call("write_file", {"path": ".husky/pre-commit", "content": "x"}, ctx)
    assert outcome.is_error and outcome.errors[0].source == NEEDS_PERSON
    assert not (root / ".husky").exists()


async def test_undo_is_asked_about_whole_with_the_diff_it_would_make(root: Path, catalog: Catalog,
                                                                     ctx: ToolContext) -> None:
    (root / ".vscode").mkdir()
    (root / ".vscode/tasks.json").write_text('{"tasks": []}\n')
    person = ctx.child(workspace=ctx.workspace.with_host_run_consent(EVERY_WRITE))
    edited = catalog.call("write_file", {"path": ".vscode/tasks.json", "content": '{"tasks": [1]}\n',
                                         "overwrite": True}, person)
    assert not edited.is_error, edited.text
    catalog.call("write_file", {"path": "notes.txt", "content": "x\n"}, ctx)
    refused = catalog.call("undo", {"steps": 2}, ctx)
    assert refused.is_error and refused.errors[0].source == NEEDS_PERSON
    assert (root / "notes.txt").exists()  # whole: not even the ordinary file was undone
    asked: list[ApprovalRequest] = []
    surface = catalog_surface(catalog, asked, True)
    undone = await surface.call("undo", {"steps": 2}, ctx)
    assert not undone.is_error, undone.text
    assert asked[0].preview is not None and '-{"tasks": [1]}' in asked[0].preview.text
    assert (root / ".vscode/tasks.json").read_text() == '{"tasks": []}\n' and not (root / "notes.txt").exists()


@pytest.mark.skipif(not bwrap_works(), reason="run_shell runs in the bwrap sandbox, which cannot create namespaces "
                    "here")
async def test_a_shell_run_holds_what_nobody_approved_and_applies_what_the_person_typed(root: Path, catalog: Catalog,
                                                                                         ctx: ToolContext) -> None:
    script = ("mkdir -p .husky && printf 'exit 0\\n' > .husky/pre-commit && chmod 755 .husky/pre-commit && "
              "echo x > x.txt")
    asked: list[ApprovalRequest] = []
    nobody = catalog_surface(catalog, asked, False)  # asked during the run: the person says no
    held = await nobody.call("run_shell", {"script": script}, ctx)
    assert not held.is_error and "NOT applied, held for a person" in held.text and ".husky (folder)" in held.text
    assert (root / "x.txt").exists() and not (root / ".husky").exists()
    assert len(asked) == 1 and asked[0].preview is not None and "new file mode 100755" in asked[0].preview.text
    typed = catalog_surface(catalog, asked, False, policy=ApprovalPolicy(), native=False)  # `codeward call run_shell`
    applied = await typed.call("run_shell", {"script": script}, ctx)
    assert "applied as part of a call a person typed or approved (files the host runs later): .husky" in applied.text
    assert len(asked) == 1 and os.access(root / ".husky/pre-commit", os.X_OK)
