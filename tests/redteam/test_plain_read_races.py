"""Reads of plain paths skip resolving symlinks (the file is opened with O_NOFOLLOW and the
descriptor checked): links swapped in, before or during a burst of reads, never lead a read
outside the project or to a secret, and links inside the project read as they always did."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.redteam.harness import SECRET_ENV, Host

pytestmark = pytest.mark.anyio

CANARY = "the agent must never change this file"
REGULAR = "an ordinary file in the project\n"
ROUNDS = 150


def _swap_in(path: Path, make: str, target: Path | None = None) -> None:
    """Atomically make ``path`` a regular file (``make='file'``) or a link to ``target``."""
    temp = path.with_name(f".{path.name}.swap")
    if make == "file":
        temp.write_text(REGULAR)
    else:
        assert target is not None
        temp.symlink_to(target, target_is_directory=target.is_dir())
    os.replace(temp, path)


@contextmanager
def _flipping(host: Host) -> Iterator[None]:
    """A process beside the agent flipping ``src/flip.txt`` (a file / a link to the canary / a
    link to ``.env``) and ``src/dir`` (a folder / a link to the folder of the canary)."""
    project = host.project
    flip, folder = project / "src" / "flip.txt", project / "src" / "dir"
    inside = project / "src" / "real-dir"
    inside.mkdir()
    (inside / "canary.txt").write_text(REGULAR)
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            for make, target in (("link", host.outside / "canary.txt"), ("file", None),
                                 ("link", project / ".env"), ("file", None)):
                _swap_in(flip, make, target)
            _swap_in(folder, "link", host.outside)
            _swap_in(folder, "link", inside)

    _swap_in(flip, "file")
    _swap_in(folder, "link", inside)
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join()
        for path in (flip, folder):
            path.unlink()


async def test_links_swapped_in_during_reads_never_lead_outside_or_to_a_secret(host: Host) -> None:
    answers = []
    async with host.serve() as session:
        with _flipping(host):
            for _ in range(ROUNDS):
                answers.append(await session.call("read_file", {"path": "src/flip.txt"}))
                answers.append(await session.call("read_file", {"path": "src/dir/canary.txt"}))
    for answer in answers:
        assert CANARY not in answer.text and SECRET_ENV not in answer.text
        assert answer.is_error or answer.text == REGULAR, answer.text
    refusals = [answer.text for answer in answers if answer.is_error]
    expected = ("outside the workspace", "blacklisted", "changed while being opened", "symlink loop", "not found",
                "cannot be resolved")  # the last three: the gate's own answers when a link flips under it
    odd = {text.splitlines()[0] for text in refusals if not any(reason in text for reason in expected)}
    assert not odd, odd


async def test_links_read_as_before_and_fresh_after_each_change(host: Host) -> None:
    project = host.project
    (project / "src" / "alias.py").symlink_to(project / "src" / "app.py")
    (project / "src" / "out.txt").symlink_to(host.outside / "canary.txt")
    (project / "src" / "env").symlink_to(project / ".env")
    (project / "up").symlink_to(host.outside, target_is_directory=True)
    async with host.serve() as session:
        app = await session.call("read_file", {"path": "src/app.py"})
        assert not app.is_error and "def main" in app.text
        alias = await session.call("read_file", {"path": "src/alias.py"})
        assert alias.text == app.text and not alias.is_error
        assert (await session.call("read_file", {"path": "src/out.txt"})).refused("outside the workspace")
        assert (await session.call("read_file", {"path": "up/canary.txt"})).refused("outside the workspace")
        assert (await session.call("read_file", {"path": "src/env"})).refused(".env")
        assert (await session.call("read_file", {"path": str(project / "src" / "app.py")})).text == app.text
        assert (await session.call("read_file", {"path": "src/../src/app.py"})).text == app.text
        assert (await session.call("read_file", {"path": "src\\app.py"})).text == app.text
        assert (await session.call("read_file", {"path": "src//app.py"})).text == app.text
        # the same path read again after it became a link sees the link, not a remembered answer
        _swap_in(project / "README.md", "link", host.outside / "canary.txt")
        assert (await session.call("read_file", {"path": "README.md"})).refused("outside the workspace")
        _swap_in(project / "README.md", "link", project / "src" / "app.py")
        assert (await session.call("read_file", {"path": "README.md"})).text == app.text
        _swap_in(project / "README.md", "file")
        assert (await session.call("read_file", {"path": "README.md"})).text == REGULAR
        (project / "README.md").unlink()
        assert (await session.call("read_file", {"path": "README.md"})).refused("not found")
        os.mkfifo(project / "pipe")
        assert (await session.call("read_file", {"path": "pipe"})).refused("not a regular file")
        assert (await session.call("read_file", {"path": "src"})).refused("directory")
    for name in ("src/alias.py", "src/out.txt", "src/env", "up", "pipe"):
        (project / name).unlink()
    host.git("checkout", "--", "README.md")
