"""No run fills the host's disk (issue "Nothing the agent writes is read or run on the host",
route 5: the overlay's upper layer lived in the host's temporary folder with only a per-file
limit, and a script held 6 GB of it).

With ``[sandbox] disk_mb`` set, a script that writes past the cap — into the project or into
``/tmp`` — is stopped, nothing of it is applied and the result says why; while a script holds
what it wrote (under the cap), the host's free disk space does not go down by it: the run's
writes live on a tmpfs in its own mount namespace.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading

import anyio
import pytest

from codeward.engines.sandbox.overlay import overlays_work
from tests.redteam.harness import Host
from tests.sandbox_support import bwrap_works

CAP_MB = 192
HELD_MB = 128
NO_DISK = overlays_work(disk_mb=CAP_MB)
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot create namespaces here"),
    pytest.mark.skipif(NO_DISK is not None, reason=f"no size-limited tmpfs for the overlay here: {NO_DISK}"),
]


class FreeSpace:
    """The least free space seen on the file systems a run could have filled, sampled while it runs."""

    def __init__(self, *folders: str) -> None:
        self.folders = folders
        self.before = {folder: shutil.disk_usage(folder).free for folder in folders}
        self.least = dict(self.before)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            for folder in self.folders:
                self.least[folder] = min(self.least[folder], shutil.disk_usage(folder).free)

    def __enter__(self) -> FreeSpace:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(2)

    def dropped_mb(self) -> float:
        return max((self.before[f] - self.least[f]) / 2**20 for f in self.folders)


async def test_a_run_cannot_fill_the_hosts_disk(host: Host) -> None:
    config = host.project / "codeward.toml"
    config.write_text(config.read_text() + f"\n[sandbox]\ndisk_mb = {CAP_MB}\n")
    os.chown(config, host.principal.uid, host.principal.gid)
    host.rebaseline()
    over = {
        "the project": f"echo started > started.txt; head -c {3 * CAP_MB}M /dev/zero > big.bin; echo after > after.txt",
        "/tmp": f"echo started > started.txt; head -c {3 * CAP_MB}M /dev/zero > /tmp/big.bin; echo after > after.txt",
    }
    held = f"head -c {HELD_MB}M /dev/zero > held.bin && sleep 2 && rm held.bin && echo done > done.txt"
    async with host.serve() as session:
        stopped = {where: await session.call("run_shell", {"script": script, "timeout_s": 120})
                   for where, script in over.items()}
        with FreeSpace(tempfile.gettempdir(), str(host.project)) as space:
            kept = await session.call("run_shell", {"script": held, "timeout_s": 120})
            await anyio.sleep(0)
    for where, answer in stopped.items():
        assert f"filled its disk cap of {CAP_MB} MiB" in answer.text, f"{where}: {answer.text}"
        assert "nothing this run wrote was applied to the workspace" in answer.text
    assert not any((host.project / name).exists() for name in ("started.txt", "big.bin", "after.txt"))
    assert "disk cap" not in kept.text and (host.project / "done.txt").read_text() == "done\n", kept.text
    assert space.dropped_mb() < HELD_MB / 2, f"the host's disk went down by {space.dropped_mb():.0f} MB while the " \
                                            f"script held {HELD_MB} MB"
    (host.project / "done.txt").unlink()
