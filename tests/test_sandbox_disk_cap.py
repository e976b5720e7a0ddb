"""The disk cap: what one run writes — its changes to the project, /tmp — shares one size-limited
tmpfs in the run's own namespace ([sandbox] disk_mb). A run that fills it is stopped, nothing it
wrote is applied, and the result says why; a run under it is applied as ever. Real scripts in the
real sandbox, the project looked at on the host afterwards."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from codeward.config.sandbox import SandboxSettings
from codeward.engines.sandbox.installation import installation_of
from codeward.engines.sandbox.overlay import overlays_work
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace
from tests.conftest import snapshot
from tests.sandbox_support import needs_bwrap

CAP_MB = 32
NO_DISK = overlays_work(disk_mb=CAP_MB)


def project(root: Path) -> dict[str, bytes]:
    """The project's files, without codeward's own record of the runs (``.codeward/``)."""
    return {name: data for name, data in snapshot(root).items() if not name.startswith(".codeward/")}


def shell(catalog: Catalog, root: Path, script: str) -> ToolOutcome:
    ctx = ToolContext(Workspace.create([root]), services=Services(SandboxSettings(disk_mb=CAP_MB)))
    return catalog.call("run_shell", {"script": script, "timeout_s": 60}, ctx)


@needs_bwrap
@pytest.mark.skipif(NO_DISK is not None, reason=f"no size-limited tmpfs for the overlay here: {NO_DISK}")
def test_a_run_over_the_cap_is_stopped_and_nothing_of_it_is_applied(catalog: Catalog, root: Path) -> None:
    (root / "keep.txt").write_text("keep\n")
    before = project(root)
    for script in (f"echo changed > keep.txt; echo new > new.txt; head -c {2 * CAP_MB}M /dev/zero > big.bin; "
                   "echo after > after.txt",
                   f"echo new > new.txt; head -c {2 * CAP_MB}M /dev/zero > /tmp/scratch.bin; echo after > after.txt",
                   f"echo new > new.txt; for i in $(seq 1 {CAP_MB}); do head -c 1M /dev/zero > part$i; done"):
        outcome = shell(catalog, root, script)
        assert not outcome.is_error, outcome.text  # a result, like any limit: the output so far, and why
        assert f"filled its disk cap of {CAP_MB} MiB" in outcome.text
        assert "nothing this run wrote was applied to the workspace" in outcome.text
        assert project(root) == before, script  # not the new file, not the changed one, not a partial big one
    under = shell(catalog, root, f"head -c {CAP_MB // 4}M /dev/zero > data.bin; "
                                 f"head -c {CAP_MB // 4}M /dev/zero > /tmp/t.bin; df -k --output=size . /tmp")
    assert not under.is_error and "disk cap" not in under.text, under.text
    assert (root / "data.bin").stat().st_size == CAP_MB // 4 * 1024 * 1024  # under the cap: applied as ever
    sizes = [int(line) for line in under.text.split("STDOUT:\n", 1)[1].split("\nSTDERR:")[0].split()[1:]]
    assert sizes == [CAP_MB * 1024] * 2  # the script sees the cap: the project and /tmp on one tmpfs of that size


def test_an_analyzer_sees_only_its_own_installation(tmp_path: Path) -> None:
    venv = tmp_path / "tools" / "venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "checker"
    script.write_text(f"#!{venv / 'bin' / 'python'}\n")
    (venv / "bin" / "python").symlink_to(sys.executable)
    node = tmp_path / "web" / "node_modules"
    (node / ".bin").mkdir(parents=True)
    (node / "pkg" / "bin").mkdir(parents=True)
    (node / "pkg" / "bin" / "lint").write_text("#!/usr/bin/env sh\n")
    (node / ".bin" / "lint").symlink_to("../pkg/bin/lint")
    shown = installation_of(str(script))
    assert shown[0] == str(venv)  # the virtualenv, then the interpreter's own installation
    assert str(Path(sys.executable).resolve().parent.parent) in shown or str(
        Path(sys.executable).resolve()).startswith("/usr/")
    assert installation_of(str(node / ".bin" / "lint")) == [str(node)]  # a node package: its node_modules
    assert installation_of(shutil.which("sh") or "/bin/sh") == []  # the system: visible in every sandbox anyway
    loose = tmp_path / "bin" / "tool"
    loose.parent.mkdir()
    loose.write_text("#!/bin/sh\n")
    assert installation_of(str(loose), roots=[tmp_path / "project"]) == [str(tmp_path / "bin")]  # not the
    # folder that holds the project (it would show the project's neighbours)


def test_an_analyzer_behind_pips_long_path_launcher_sees_its_interpreter(tmp_path: Path) -> None:
    """pip writes a script in a virtualenv whose path is too long for ``#!`` (pre-commit's, under a deep
    temporary folder) as a ``/bin/sh`` launcher naming the interpreter on its second line: the
    interpreter's own installation must be shown too, or the script cannot start in the box."""
    venv = tmp_path.joinpath(*["deep-folder-name"] * 8, "py_env-python3.11")
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.symlink_to(Path(sys.executable).resolve())
    script = venv / "bin" / "checker"
    script.write_text(f"#!/bin/sh\n'''exec' {python} \"$0\" \"$@\"\n' '''\nimport sys\n")
    assert len(f"#!{python}") > 127  # too long for the kernel's #! line: why pip wrote a launcher
    shown = installation_of(str(script))
    assert shown[0] == str(venv)
    interpreter = Path(sys.executable).resolve()
    assert str(interpreter.parent.parent) in shown or str(interpreter).startswith("/usr/"), shown
