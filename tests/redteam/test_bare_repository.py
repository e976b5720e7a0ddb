"""A bare repository built file by file: ``HEAD``, ``config`` (with a planted ``core.fsmonitor``),
``objects/`` and ``refs/`` written into a folder through every tool that writes, in every order,
and by a script in ``run_shell``. Git takes such a folder for a repository when it runs inside
it or is given it as ``--git-dir``, and obeys its config on the host.

Every variant is refused at the write that would complete the repository, saying why; ordinary
files called ``config`` or ``HEAD`` stay writable. The fixture then runs the host's git in and on
every folder holding a ``HEAD`` (and the project's own repository): nothing planted may run.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest

from codeward.engines.sandbox.overlay import overlays_work
from tests.redteam.harness import Host, Session
from tests.sandbox_support import bwrap_works

pytestmark = pytest.mark.anyio

REFUSAL = "a folder git would open as a repository"


def planted_config(host: Host) -> str:
    return (f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = {host.project}\n"
            f"\tfsmonitor = {host.marker_command('bare-fsmonitor')}; false\n")


def bare_parts(host: Host) -> dict[str, str]:
    return {"HEAD": "ref: refs/heads/main\n", "config": planted_config(host), "objects/info/packs": "",
            "refs/heads/.keep": ""}


async def write_all(session: Session, folder: str, parts: dict[str, str]) -> list[Any]:
    return [await session.call("write_file", {"path": f"{folder}{rel}", "content": text, "overwrite": True})
            for rel, text in parts.items()]


def opened_by_git(host: Host, folder: str) -> bool:
    """Whether the host's git, given the folder as ``--git-dir``, takes it for a repository."""
    path = host.project / folder
    if not path.is_dir():
        return False
    done = host.git("--git-dir", str(path), "rev-parse", "--git-dir")
    return done.returncode == 0


async def test_the_file_tools_cannot_build_a_bare_repository(host: Host) -> None:
    parts = bare_parts(host)
    async with host.serve() as session:
        # write_file, in the natural order and backwards, in a subfolder and in the root itself
        forwards = await write_all(session, "tools/", parts)
        backwards = await write_all(session, "vendor/cache/", dict(reversed(list(parts.items()))))
        at_root = await write_all(session, "", {"HEAD": parts["HEAD"], "objects/info/packs": "",
                                                "refs/heads/.keep": ""})
        # make_directory after a HEAD, and a folder moved in beside one
        await session.call("write_file", {"path": "made/HEAD", "content": parts["HEAD"]})
        made = [await session.call("make_directory", {"path": f"made/{name}"}) for name in ("objects", "refs")]
        await session.call("write_file", {"path": "moved/HEAD", "content": parts["HEAD"]})
        await session.call("make_directory", {"path": "staging/objects/info"})
        moved = await session.call("move_path", {"source": "staging/objects", "destination": "moved/objects"})
        await session.call("make_directory", {"path": "staging2/refs/heads"})
        await session.call("write_file", {"path": "staging2/config", "content": parts["config"]})
        head_in = await session.call("write_file", {"path": "head.txt", "content": parts["HEAD"]})
        renamed = await session.call("move_path", {"source": "head.txt", "destination": "staging2/HEAD"})
        # one patch adding the whole repository at once
        patch = "".join(f"--- /dev/null\n+++ b/patched/{rel}\n@@ -0,0 +1 @@\n+{(text.splitlines() or ['x'])[0]}\n"
                        for rel, text in parts.items())
        patched = await session.call("apply_patch", {"patch": patch})
        # ordinary files that only share the names stay writable
        ordinary = [await session.call("write_file", {"path": path, "content": "ordinary\n"})
                    for path in ("docs/HEAD", "docs/config", "app/objects/user.py", "app/refs/notes.md", "config")]
    for attempt in (forwards, backwards, at_root, made):
        refusals = [answer for answer in attempt if answer.is_error]
        assert len(refusals) >= 1 and all(answer.refused(REFUSAL, "human act") for answer in refusals), \
            [answer.text for answer in attempt]
    for answer in (moved, renamed, patched):
        assert answer.refused(REFUSAL, "human act"), answer.text
    assert not head_in.is_error and not any(answer.is_error for answer in ordinary), [a.text for a in ordinary]
    assert "root" in " ".join(answer.text for answer in at_root)
    for folder in ("tools", "vendor/cache", ".", "made", "moved", "staging2", "patched", "docs"):
        assert not opened_by_git(host, folder), folder
    assert not (host.project / "patched").exists()  # the refused patch wrote nothing
    # the fixture runs the host's git in and on every folder holding a HEAD, and checks the markers


async def test_a_repository_already_in_the_project_cannot_be_written(host: Host) -> None:
    fixture = host.project / "fixtures" / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(fixture)], check=True, capture_output=True)
    if host.principal.uid != os.geteuid():
        for path in (fixture.parent, *fixture.parent.rglob("*")):
            os.chown(path, host.principal.uid, host.principal.gid, follow_symlinks=False)
    host.rebaseline()
    async with host.serve() as session:
        config = await session.call("write_file", {"path": "fixtures/remote.git/config",
                                                   "content": planted_config(host), "overwrite": True})
        hook = await session.call("write_file", {"path": "fixtures/remote.git/hooks/post-update",
                                                 "content": f"#!/bin/sh\n{host.marker_command('hook')}\n"})
        swapped = await session.call("move_path", {"source": "fixtures/remote.git", "destination": "elsewhere.git"})
        deleted = await session.call("delete_path", {"path": "fixtures/remote.git/HEAD"})
        beside = await session.call("write_file", {"path": "fixtures/README.md", "content": "fixtures\n"})
    for answer in (config, hook, swapped, deleted):
        assert answer.refused("fixtures/remote.git", "human act"), answer.text
    assert not beside.is_error, beside.text
    assert "fsmonitor" not in (fixture / "config").read_text()


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot create namespaces here")
@pytest.mark.skipif(overlays_work() is not None, reason=f"no overlay here: {overlays_work()}")
async def test_a_script_cannot_build_one_by_hand_either(host: Host) -> None:
    config = planted_config(host).replace("\n", "\\n").replace("\t", "\\t")
    by_hand = ("printf 'ref: refs/heads/main\\n' > HEAD; mkdir -p objects/info refs/heads; "
               f"printf '{config}' > config")
    async with host.serve() as session:
        await session.call("run_shell", {"script": "true"})
        host.rebaseline()
        in_root = await session.call("run_shell", {"script": by_hand})
        in_folder = await session.call("run_shell", {"script": f"mkdir -p lib/x && cd lib/x && {by_hand}"})
        ordinary = await session.call("run_shell", {"script": "mkdir -p docs && echo hi > docs/HEAD && "
                                                              "echo k=1 > docs/config"})
    for answer in (in_root, in_folder):
        assert "git repository's metadata" in answer.text, answer.text
    assert not os.path.lexists(host.project / "HEAD") and not opened_by_git(host, ".")
    assert not opened_by_git(host, "lib/x")
    assert (host.project / "docs" / "HEAD").read_text() == "hi\n" and "git repository" not in ordinary.text
