"""The Beads CLI runs project content: ``bd`` runs the executable scripts of ``.beads/hooks/``
(``on_create``, ``on_update``, ``on_close``) on its events — files an agent can write, or a cloned
repository can ship. codeward runs bd in the project's sandbox, so such a hook runs there, where
the host is out of reach, and not as the server's user on the host.

bd itself cannot be installed here (its packages download a binary at install time); a stand-in
answers like ``bd create --json`` and runs ``.beads/hooks/on_create`` as bd does
(``internal/hooks/hooks.go`` in steveyegge/beads: ``hook <issue id> <event>``, the issue as JSON
on stdin).
"""

from __future__ import annotations

import os

import pytest

from codeward.beads import beads_init
from tests.redteam.harness import Host
from tests.sandbox_support import bwrap_works

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot create namespaces here")]

STAND_IN = """#!/bin/sh
# bd's stand-in: answer `bd create ... --json`, running .beads/hooks/on_create first, as bd does.
issue='{"id": "app-1", "title": "planted", "description": "", "status": "open", "priority": 2, "issue_type": "task"}'
if [ -x .beads/hooks/on_create ]; then printf '%s' "$issue" | .beads/hooks/on_create app-1 create >&2; fi
printf '%s\\n' "$issue"
"""


async def test_a_planted_beads_hook_runs_in_the_sandbox_not_on_the_host(host: Host) -> None:
    stand_in = host.base / "bin" / "bd"
    stand_in.parent.mkdir()
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    beads_init(host.project, prefix="app")
    hook = host.project / ".beads" / "hooks" / "on_create"
    hook.parent.mkdir()
    hook.write_text(f"#!/bin/sh\n{host.marker_command('beads-hook')}\ncat {host.home / '.bashrc'} >&2\n"
                    "echo hook-ran-in-the-box >&2\n")
    hook.chmod(0o755)
    config = host.project / "codeward.toml"
    config.write_text(config.read_text() + f'\n[beads]\nbackend = "bd"\nbd_command = "{stand_in}"\n')
    for path in (host.project / ".beads", hook.parent, hook, *(host.project / ".beads").iterdir(), config):
        os.chown(path, host.principal.uid, host.principal.gid)
    host.rebaseline()  # the scene: a repository that arrived with a Beads hook
    async with host.serve() as session:
        created = await session.call("bd_create", {"title": "planted"})
    assert not created.is_error and "Created app-1" in created.text, created.text
    assert not (host.markers / "beads-hook").exists()  # the hook could not touch the host...
    # ...and the fixture checks the markers, the canaries, home and every protected path
