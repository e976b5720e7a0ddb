"""Links that leave the roots once the kernel follows them (issue "Nothing the agent writes is read or
run on the host", route 4), through real MCP sessions as root and as a normal user.

A link's target is walked by the kernel component by component, each link followed before the
next ``..`` applies; checked as text (``normpath``), ``a/b/c/sub/../../../../<outside>`` with
``sub -> /usr/lib/x86_64-linux-gnu`` looks inside the project and leads out of it. codeward's own
tools never follow such a link; the person's tools would. Every link a run (or a move) would leave
on the host is judged where the kernel would take it.
"""

from __future__ import annotations

import os

import pytest

from tests.redteam.harness import Host
from tests.sandbox_support import bwrap_works

pytestmark = pytest.mark.anyio

ESCAPES = ("esc", "esc1", "esc2", "esc3", "aaa", "up", "deeper")


async def test_no_link_left_by_a_run_or_a_move_leads_outside(host: Host) -> None:
    host.place("deep/a/b/keep.txt", "kept\n")
    link = host.project / "deep/a/b/l"
    link.symlink_to("../../../src/app.py")  # the person's link: deep/a/b → the project's src/app.py
    os.lchown(link, host.principal.uid, host.principal.gid)
    host.rebaseline()
    canary = host.outside / "canary.txt"
    script = "\n".join([
        "mkdir -p a/b/c d/e",
        "ln -s /usr/lib/x86_64-linux-gnu a/b/c/sub",  # a system folder: a link there is fine
        f"ln -s a/b/c/sub/../../../..{canary} esc",  # .. applied after following sub
        f"ln -s /usr/lib/ssl/private/../../..{canary} esc1",  # private -> /etc/ssl/private
        "ln -s /usr/lib/ssl/private esc2",  # looks like /usr, lands in /etc
        f"ln -s d/e/../../a/b/c/sub/../../../..{canary} esc3",  # real folders first, then the link
        f"ln -s zzz/../..{canary} aaa",  # through a link the same run makes later in name order
        "ln -s . zzz",
        f"ln -s a/b/c/sub/..{canary} up",
        "ln -s ../../../../../../../../../../etc/passwd d/e/deeper",
        "ln -s src/app.py fine",  # inside: kept
        "ln -s d/e/../../src/app.py fine2",  # .. through real folders only: kept
        "ln -s /usr/bin/env tool",  # the system: kept
    ])
    async with host.serve() as session:
        run = await session.call("run_shell", {"script": script}) if bwrap_works() else None  # bwrap: the sandbox
        # a moved link resolves from its new folder: one level up, the person's link would lead out
        alone = await session.call("move_path", {"source": "deep/a/b/l", "destination": "l"})
        folder = await session.call("move_path", {"source": "deep/a", "destination": "x"})
        assert alone.refused("pointing outside the workspace") and folder.refused("pointing outside the workspace")
        assert os.readlink(link) == "../../../src/app.py" and not (host.project / "x").exists()
        beside = await session.call("move_path", {"source": "deep/a/b/l", "destination": "deep/a/c/l"})
    assert not beside.is_error, beside.text  # the same depth: it still leads to src/app.py
    assert (host.project / "deep/a/c/l").resolve() == (host.project / "src/app.py").resolve()
    if run is None:
        return
    assert not run.is_error, run.text
    left = [name for name in ESCAPES if os.path.lexists(host.project / name) or
            os.path.lexists(host.project / "d/e" / name)]
    assert left == [], f"links leading out were left on the host: {left}\n{run.text}"
    for name in ("esc", "esc1", "esc2", "esc3", "aaa", "up", "d/e/deeper"):
        assert name in run.text, (name, run.text)
    for name, target in (("fine", "src/app.py"), ("fine2", "d/e/../../src/app.py"), ("tool", "/usr/bin/env"),
                         ("a/b/c/sub", "/usr/lib/x86_64-linux-gnu"), ("zzz", ".")):
        assert os.readlink(host.project / name) == target, name
    assert "pointing outside the workspace" in run.text and "climbs (..) out of the folder the link" in run.text
