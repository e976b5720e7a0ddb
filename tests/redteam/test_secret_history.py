"""Secrets through git inside ``run_shell`` (issue attack 3, the sandbox half): the sandbox covers
``.env`` with an empty stand-in, but the project's history still holds it. A script reads it back
with ``git show HEAD:.env``, ``git cat-file``, ``git log -p``, ``git archive``, the stash, the
index, a reflog-only commit, a dangling blob, a nested repository, or by inflating
``.git/objects`` itself.

codeward checks before the run whether any file the workspace keeps secret is in a repository's
history (or stored at all); if so that repository's object store is hidden from the script and
the result says why and how the operator can allow it. A repository with a clean history keeps
working as before, and the operator's ``[shell] allow_secret_history`` gives it back. The fixture
searches every output for the planted secrets and checks the host afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from codeward.engines.sandbox.overlay import overlays_work
from tests.redteam.harness import SECRET_ENV, SECRET_NAMED, Host
from tests.sandbox_support import bwrap_works

NO_OVERLAY = overlays_work()
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot create namespaces here"),
    pytest.mark.skipif(NO_OVERLAY is not None, reason=f"no overlay here: {NO_OVERLAY}"),
]

UNAVAILABLE = "git history unavailable"
INFLATE = ("python3 - <<'PY'\n"
           "import pathlib, zlib\n"
           "for path in pathlib.Path('.git').rglob('*'):\n"
           "    if path.is_file() and not path.is_symlink():\n"
           "        data = path.read_bytes()\n"
           "        for start in range(len(data)):\n"
           "            try:\n"
           "                print(zlib.decompressobj().decompress(data[start:]))\n"
           "            except zlib.error:\n"
           "                continue\n"
           "PY\n")
"""Every zlib stream in every file under .git, loose objects and packs alike, inflated."""
READS = [
    "git show HEAD:.env", "git cat-file -p HEAD:.env", "git log -p --all", "git show :.env",
    "git archive HEAD | tar -xOf - .env", "git stash list -p", "git show HEAD~1:prod.env",
    "git log -g -p", "git grep -h TOKEN $(git rev-list --all --reflog)",
    "git fsck --lost-found >/dev/null 2>&1; cat .git/lost-found/other/* 2>/dev/null",
    "cat .git/objects/*/* .git/objects/pack/* 2>/dev/null | strings | grep -i token",
    INFLATE,
]


def give(host: Host) -> None:
    """Files made by root for the scene belong to the principal (as the fixture's do)."""
    if host.principal.uid != os.geteuid():
        for path in (host.project, *host.project.rglob("*")):
            os.chown(path, host.principal.uid, host.principal.gid, follow_symlinks=False)


def deepen(host: Host) -> None:
    """More history with secrets in every place git keeps one: an older commit, a stash, the
    index, a commit only the reflog reaches, a nested repository, a bare clone in the project."""
    (host.project / "prod.env").write_text(f"OLD_TOKEN={SECRET_NAMED}-old\n")
    host.git("commit", "-q", "-am", "older secret")
    (host.project / "prod.env").write_text(f"token = {SECRET_NAMED}\n")
    host.git("commit", "-q", "-am", "rotated")
    (host.project / ".env").write_text(f"API_TOKEN={SECRET_ENV}-stashed\n")
    host.git("stash", "-q")
    (host.project / ".env").write_text(f"API_TOKEN={SECRET_ENV}-staged\n")
    host.git("add", ".env")
    host.git("commit", "-q", "-m", "soon undone")
    host.git("reset", "-q", "--soft", "HEAD~1")
    (host.project / ".env").write_text(f"API_TOKEN={SECRET_ENV}\n")
    nested = host.project / "vendor" / "lib"
    nested.mkdir(parents=True)
    (nested / ".env").write_text(f"NESTED={SECRET_ENV}-nested\n")
    give(host)
    host.git("init", "-q", cwd=nested)
    host.git("add", "-A", cwd=nested)
    host.git("commit", "-q", "-m", "nested", cwd=nested)
    host.git("clone", "-q", "--bare", str(host.project), str(host.project / "fixtures" / "mirror.git"))
    give(host)
    host.rebaseline()


def fetch_a_secret_into_a_new_ref_folder(host: Host) -> None:
    """A commit holding ``.env`` fetched into ``refs/heads/team/leak`` (a ref folder made after the server's
    last check), the work tree untouched: only the refs, their logs and the store change."""
    source = host.project.parent / "leak-source"
    source.mkdir()
    (source / ".env").write_text(f"API_TOKEN={SECRET_ENV}-fetched\n")
    for args in (("init", "-q"), ("add", "-f", ".env"), ("-c", "user.name=t", "-c", "user.email=t@example.invalid",
                                                         "commit", "-q", "-m", "leak")):
        subprocess.run(["git", *args], cwd=source, check=True, capture_output=True)
    for path in (source, *source.rglob("*")):
        os.chown(path, host.principal.uid, host.principal.gid, follow_symlinks=False)
    fetched = host.git("fetch", "-q", str(source), "HEAD:refs/heads/team/leak")
    shutil.rmtree(source)
    assert fetched.returncode == 0, fetched.stderr
    host.rebaseline()


async def test_a_script_cannot_read_secrets_out_of_the_history(host: Host) -> None:
    deepen(host)
    async with host.serve() as session:
        answers = [await session.call("run_shell", {"script": script}) for script in READS]
        nested = await session.call("run_shell", {"script": "cd vendor/lib && git show HEAD:.env; git log -p"})
        bare = await session.call("run_shell", {"script": "git --git-dir=fixtures/mirror.git show HEAD:.env; "
                                                          "git --git-dir=fixtures/mirror.git log -p --all"})
        files = await session.call("run_shell", {"script": "cat README.md; ls src; git status --short | head -3"})
    for answer in [*answers, nested, bare]:
        assert UNAVAILABLE in answer.text and "allow_secret_history" in answer.text, answer.text
        assert "vendor/lib/.git" in answer.text and "fixtures/mirror.git" in answer.text and ".env" in answer.text
    assert "# Demo project" in files.text and "app.py" in files.text  # the work tree is there as usual
    # the fixture searches every answer for the planted secrets and checks the host


async def test_a_clean_history_stays_readable_and_the_operator_can_allow_one(host: Host) -> None:
    shutil.rmtree(host.project / ".git")
    host.git("init", "-q")
    host.git("add", "README.md", "src")
    host.git("commit", "-q", "-m", "only code")
    host.git("commit", "-q", "--allow-empty", "-m", "second")
    give(host)
    host.rebaseline()
    script = "git log --oneline | wc -l; git show HEAD~1:README.md; git cat-file -t HEAD"
    async with host.serve() as session:
        clean = await session.call("run_shell", {"script": script})
        again = await session.call("run_shell", {"script": script})  # the remembered answer
        fetch_a_secret_into_a_new_ref_folder(host)  # the work tree and the list of secrets stay as they were
        leaked = await session.call("run_shell", {"script": "git show team/leak:.env; git log -p team/leak"})
        (host.project / ".env").write_text(f"API_TOKEN={SECRET_ENV}\n")
        give(host)
        host.git("add", "-f", ".env")  # now staged: in the store, reachable from the index
        host.rebaseline()
        staged = await session.call("run_shell", {"script": "git show :.env; git cat-file -p :.env"})
    for answer in (clean, again):
        assert "# Demo project" in answer.text and "commit" in answer.text and UNAVAILABLE not in answer.text, \
            answer.text
    assert UNAVAILABLE in leaked.text and ".env" in leaked.text, leaked.text
    assert UNAVAILABLE in staged.text and ".env" in staged.text, staged.text
    config = host.project / "codeward.toml"
    config.write_text(config.read_text() + "\n[shell]\nallow_secret_history = true\n")
    give(host)
    host.rebaseline()
    async with host.serve() as session:
        allowed = await session.call("run_shell", {"script": "git log --oneline | wc -l; git show HEAD:README.md"})
    assert UNAVAILABLE not in allowed.text and "# Demo project" in allowed.text, allowed.text
