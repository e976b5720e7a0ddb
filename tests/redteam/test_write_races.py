"""Two writers completing a bare repository between them (issue "Nothing the agent writes is read or
run on the host", route 3), through real MCP sessions as root and as a normal user.

Each write is checked before it is made: ``HEAD`` alone, or ``objects/`` alone, is an ordinary
folder's entry. Two writers racing — two ``codeward serve`` processes on one project (two agent
sessions, replicas on shared storage), or two calls in one server — could each pass the check
while the other's half was not yet there: ``s/HEAD`` from one, ``s/objects``, ``s/refs`` or
``s/config`` from the other, and the host's next ``git --git-dir=s ...`` obeys the planted config.
The lock every codeward process on the root shares serializes them; the re-check after the write
takes back what a write completed anyway. The harness runs the host's git in and on every folder
holding a ``HEAD`` afterwards, and every folder is tested here as git tests it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.redteam.harness import Host, Session

pytestmark = pytest.mark.anyio

ROUNDS = 6
"""Races per pair of writers: each is a fresh folder."""
STAGGER_S = 0.03
"""Round ``n`` sends the second half ``n * STAGGER_S`` after the patch: the rounds sweep the time
between the patch's check and its ``HEAD``, wherever it falls on a loaded machine."""
FILLER = 40
"""Files the patch writes before its ``HEAD``: the time between its check and that write, which an
unlocked writer would fit its half into."""


def fsmonitor_config(host: Host) -> str:
    return f"[core]\n\trepositoryformatversion = 0\n\tfsmonitor = {host.marker_command('race')}; false\n"


def head_patch(folder: str) -> str:
    """A patch adding many files to ``folder`` and its ``HEAD`` last."""
    parts = [f"--- /dev/null\n+++ b/{folder}/filler{index}.txt\n@@ -0,0 +1 @@\n+{index}\n" for index in range(FILLER)]
    parts.append(f"--- /dev/null\n+++ b/{folder}/HEAD\n@@ -0,0 +1 @@\n+ref: refs/heads/main\n")
    return "".join(parts)


def other_half(host: Host, folder: str, round_number: int) -> tuple[str, dict[str, Any]]:
    """What the second writer adds: ``objects/``, ``refs/`` or a planted ``config``, in turn."""
    kind = round_number % 3
    if kind == 0:
        return "make_directory", {"path": f"{folder}/objects"}
    if kind == 1:
        return "write_file", {"path": f"{folder}/refs/heads/main", "content": "0" * 40 + "\n"}
    return "apply_patch", {"patch": f"--- /dev/null\n+++ b/{folder}/objects/info/alternates\n@@ -0,0 +1 @@\n+x\n"
                                    f"--- /dev/null\n+++ b/{folder}/config\n@@ -0,0 +1,3 @@\n"
                                    + "".join(f"+{line}\n" for line in fsmonitor_config(host).splitlines())}


async def race(host: Host, first: Session, second: Session, prefix: str) -> list[str]:
    """Every round: the ``HEAD`` patch through ``first`` and, a little later, the other half through
    ``second``. The folders that are repositories afterwards (none, if the writers were kept apart)."""

    async def later(delay: float, name: str, arguments: dict[str, Any]) -> None:
        await anyio.sleep(delay)
        await second.call(name, arguments)

    for number in range(ROUNDS):
        folder = f"{prefix}{number}"
        name, arguments = other_half(host, folder, number)
        async with anyio.create_task_group() as group:
            group.start_soon(first.call, "apply_patch", {"patch": head_patch(folder)})
            group.start_soon(later, number * STAGGER_S, name, arguments)
    return [folder.name for folder in sorted(host.project.glob(f"{prefix}*")) if is_git_directory(folder)]


def is_git_directory(folder: Path) -> bool:
    """git's own test (``is_git_directory``): a ``HEAD`` beside ``objects/`` and ``refs/`` — or any
    half-built one (``HEAD`` with either), which one more write would complete."""
    return (folder / "HEAD").exists() and ((folder / "objects").exists() or (folder / "refs").exists())


async def test_two_writers_never_build_a_bare_repository_between_them(host: Host) -> None:
    async with host.serve() as first, host.serve() as second:
        across = await race(host, first, second, "s")  # two servers on one project
        within = await race(host, first, first, "t")  # two calls in one server
    assert across == [], f"bare repositories built by two servers: {across}"
    assert within == [], f"bare repositories built by two calls of one server: {within}"
