"""A server keeps its secret list current by file events instead of walking the project before
every run (``shell/secret_index.py``). Each way a secret can appear between two runs of one
session — made by the person (a new deep folder, a file turned into a key, a folder moved in from
outside, renamed inside, deleted and made again, a hard link written from elsewhere) or by a run
whose writes came back — must be hidden from the next run exactly as a fresh walk would hide it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.redteam.harness import Host

pytestmark = pytest.mark.anyio

LATE = "CW-REDTEAM-LATE-SECRET-"


def late_key(tag: str) -> str:
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{LATE}{tag}\n-----END OPENSSH PRIVATE KEY-----\n"


def give(host: Host, path: Path) -> None:
    """Hand ``path`` (and the folders above it in the project) to the principal, as its own would be."""
    for each in [path, *path.parents]:
        if not each.is_relative_to(host.project) or each == host.project:
            break
        os.chown(each, host.principal.uid, host.principal.gid, follow_symlinks=False)


async def test_secrets_made_between_runs_are_hidden_from_the_next(host: Host, tmp_path: Path) -> None:
    project = host.project
    outside = tmp_path / "elsewhere"  # not the harness's watched outside/: this test moves things out of it
    outside.mkdir()
    os.chown(tmp_path, host.principal.uid, host.principal.gid)
    os.chown(outside, host.principal.uid, host.principal.gid)
    linked_outside = outside / "linked.txt"  # a file with a second name in the project, listed by the first run
    linked_outside.write_text("nothing yet\n")
    os.chown(linked_outside, host.principal.uid, host.principal.gid)
    (project / "linked").mkdir()
    os.chown(project / "linked", host.principal.uid, host.principal.gid)
    os.link(linked_outside, project / "linked" / "notes.txt")
    host.rebaseline()
    async with host.serve() as session:
        first = await session.call("run_shell", {"script": "echo warm; mkdir -p gone/again; echo x > gone/again/f"})
        assert "warm" in first.text and not first.is_error, first.text

        # the person, between runs: changes the kept list follows folder by folder
        host.place("deep/a/b/c/.env", f"TOKEN={LATE}dotenv\n")
        host.place("notes/readme.txt", "plain words\n")
        (project / "notes/readme.txt").write_text(late_key("turned"))  # the same file, now a key
        shutil.rmtree(project / "gone")
        host.place("gone/again/.env", f"{LATE}remade\n")
        with open(linked_outside, "r+") as handle:  # written through the other name: no event in the project
            handle.write(late_key("hard-link"))
        reads = await session.call("run_shell", {"script": (
            "cat deep/a/b/c/.env notes/readme.txt gone/again/.env linked/notes.txt; echo done")})
        assert "done" in reads.text and LATE not in reads.text, reads.text

        # ...and changes that make it walk again: a folder moved in from outside, one renamed inside
        moved_in = outside / "incoming"
        moved_in.mkdir()
        (moved_in / "id_ed25519").write_text(late_key("moved-in"))
        for each in (moved_in, moved_in / "id_ed25519"):
            os.chown(each, host.principal.uid, host.principal.gid)
        os.rename(moved_in, project / "incoming")
        host.place("to-rename/server.key", f"{LATE}renamed\n")
        moved = await session.call("run_shell", {"script": "cat renamed/server.key 2>&1; echo between"})
        assert "between" in moved.text, moved.text
        os.rename(project / "to-rename", project / "renamed")
        reads = await session.call("run_shell", {"script": "cat incoming/id_ed25519 renamed/server.key; echo done"})
        assert "done" in reads.text and LATE not in reads.text, reads.text

        # a run makes one: a key by its content under a plain name (a secret's name is refused on the way
        # back); it comes back through the gate, and the next run must not read it
        made = await session.call("run_shell", {"script": (
            "mkdir -p made/here && printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\\n%s\\n' "
            f"'{LATE}by-run' > made/here/key.txt")})
        held = (project / "made/here/key.txt").read_text() if (project / "made/here/key.txt").exists() else ""
        if held:  # applied: then hidden from the next run
            again = await session.call("run_shell", {"script": "cat made/here/key.txt; echo done"})
            assert "done" in again.text and LATE not in again.text, again.text
        else:
            assert "made/here/key.txt" in made.text, made.text  # not applied, and said so

        # a secret removed is shown again (the list is current both ways): the stand-in is gone
        (project / "deep/a/b/c/.env").unlink()
        host.place("deep/a/b/c/plain.txt", "visible\n")
        after = await session.call("run_shell", {"script": "ls -a deep/a/b/c; cat deep/a/b/c/plain.txt"})
        listed = after.text.split("\nSTDERR:")[0]
        assert "visible" in listed and ".env" not in listed, after.text
