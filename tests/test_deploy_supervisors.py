"""The supervisors' files in deploy/: the systemd unit passes ``systemd-analyze verify`` and the Compose file
``docker-compose config``, each with the drain signal, a grace period above the drain deadline and a restart
policy, Compose with healthchecks (``/readyz``, ``redis-cli ping``) and Redis persistence; Compose refuses
to start without the token, naming it.

Running them needs an init system and registry images this machine has not; the processes they supervise
are tested live in tests/test_team_supervision.py, test_team_drain.py and test_team_failover.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from codeward.config.server import ServerSettings

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
DRAIN_S = ServerSettings().drain_timeout


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_the_systemd_unit_verifies_and_drains_before_it_is_killed(tmp_path: Path) -> None:
    text = (DEPLOY / "systemd" / "codeward-replica@.service").read_text(encoding="utf-8")
    settings = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    assert settings["KillSignal"] == "SIGTERM" and settings["KillMode"] == "mixed"
    assert int(settings["TimeoutStopSec"]) > DRAIN_S
    assert settings["Restart"] == "always" and settings["ExecReload"] == "/bin/kill -HUP $MAINPID"
    # An instance of it, with this checkout's codeward where the unit expects the installed one.
    unit = tmp_path / "codeward-replica@8701.service"
    unit.write_text(text.replace("/opt/codeward/bin/codeward", str(Path(sys.executable).parent / "codeward")),
                    encoding="utf-8")
    verified = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0 and not verified.stderr.strip(), verified.stderr


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose is not installed (scripts/test "
                    "installs Debian's)")
def test_the_compose_file_restarts_probes_and_drains() -> None:
    compose = ["docker-compose", "-f", str(DEPLOY / "docker-compose.yml"), "config"]
    env = {**os.environ, "CODEWARD_TOKEN": "t", "PROJECT": "/srv/project"}
    resolved = subprocess.run(compose, capture_output=True, text=True, timeout=60, env=env)
    assert resolved.returncode == 0, resolved.stderr
    services = yaml.safe_load(resolved.stdout)["services"]
    assert set(services) == {"redis", "replica-1", "replica-2", "nginx"}
    assert all(service["restart"] == "unless-stopped" for service in services.values())
    assert "--appendonly" in services["redis"]["command"] and "redis-cli" in services["redis"]["healthcheck"]["test"]
    for name in ("replica-1", "replica-2"):
        replica = services[name]
        assert replica["stop_signal"] == "SIGTERM" and int(replica["stop_grace_period"].rstrip("s")) > DRAIN_S
        assert "/readyz" in " ".join(replica["healthcheck"]["test"])
        assert replica["depends_on"]["redis"]["condition"] == "service_healthy"
        assert replica["environment"]["CODEWARD_STATE_URL"] == "redis://redis:6379/0"
    assert "replica-1:8701 replica-2:8701" in " ".join(services["nginx"]["command"])

    without_token = {key: value for key, value in env.items() if key != "CODEWARD_TOKEN"}
    refused = subprocess.run(compose, capture_output=True, text=True, timeout=60, env=without_token)
    assert refused.returncode != 0 and "CODEWARD_TOKEN" in refused.stderr, refused.stderr
