"""Real services for the replica tests: Debian's redis-server and nginx on loopback ports, and
codeward gateway replicas behind them (each in its own process group, so a test can kill one)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.gateway_support import PEER
from tests.process_support import free_port, start, stop

TOKEN = "replica-test-token"
ALICE = "alice-own-token"
BOB = "bob-own-token"
CAROL = "carol-own-token"
DAVE = "dave-own-token"
USERS = {"alice": (ALICE, None), "bob": (BOB, ["agent", "approver"]), "carol": (CAROL, ["approver"]),
         "dave": (DAVE, ["auditor"])}
"""The team of the replica tests: alice calls tools (no roles named: an agent), bob calls tools and
approves, carol only approves, dave only reads the audit and the figures."""


def users_file(path: Path, users: Mapping[str, tuple[str, Sequence[str] | None]] = USERS) -> Path:
    """A users file: each user's token hash and roles."""

    lines = []
    for name, (token, roles) in users.items():
        lines.append(f'[users.{name}]\ntoken_sha256 = "{hashlib.sha256(token.encode()).hexdigest()}"')
        if roles is not None:
            lines.append(f"roles = {list(roles)!r}".replace("'", '"'))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def have(*programs: str) -> str | None:
    """The first program of ``programs`` that is missing, or None."""
    for program in programs:
        if shutil.which(program) is None and not Path("/usr/sbin", program).exists():
            return program
    return None


def _program(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


@contextmanager
def redis_server(directory: Path, port: int | None = None) -> Iterator[int]:
    """A throwaway redis-server on 127.0.0.1 (no persistence), stopped at the end."""
    port = port or free_port()
    proc = start([_program("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                  "--appendonly", "no", "--dir", str(directory)], port)
    try:
        yield port
    finally:
        stop(proc)


@contextmanager
def redis_sentinel(directory: Path, master: str = "codeward") -> Iterator[dict[str, Any]]:
    """A Redis master, one replica of it and a Redis Sentinel (Debian's redis-sentinel) watching them, on
    loopback, failing over one second after the master stops answering: ``master`` and ``replica``
    (the processes by port), ``sentinel`` (its port), ``name``."""
    import redis

    ports = {"master": free_port(), "replica": free_port(), "sentinel": free_port()}
    processes: dict[int, subprocess.Popen[bytes]] = {}
    try:
        for role in ("master", "replica"):
            folder = directory / f"redis-{role}"
            folder.mkdir()
            extra = ["--replicaof", "127.0.0.1", str(ports["master"])] if role == "replica" else []
            processes[ports[role]] = start(
                [_program("redis-server"), "--port", str(ports[role]), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(folder), *extra], ports[role])
        config = directory / "sentinel.conf"  # Sentinel rewrites its file as it learns: a copy of its own
        config.write_text(f"port {ports['sentinel']}\nbind 127.0.0.1\ndir {directory}\n"
                          f"sentinel monitor {master} 127.0.0.1 {ports['master']} 1\n"
                          f"sentinel down-after-milliseconds {master} 1000\n"
                          f"sentinel failover-timeout {master} 10000\n", encoding="utf-8")
        processes[ports["sentinel"]] = start([_program("redis-sentinel"), str(config)], ports["sentinel"])
        sentinel = redis.Redis(port=ports["sentinel"], decode_responses=True)
        deadline = time.monotonic() + 30
        while not any(r.get("master-link-status") == "ok" for r in sentinel.sentinel_slaves(master)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Sentinel saw no replica within 30s: {sentinel.sentinel_slaves(master)}")
            time.sleep(0.1)
        yield {"name": master, "sentinel": ports["sentinel"], "processes": processes,
               "master": ports["master"], "replica": ports["replica"]}
    finally:
        for proc in processes.values():
            stop(proc)


def sentinel_master(sentinel_port: int, name: str = "codeward") -> int | None:
    """The port of the master the Sentinel names now (None while it knows no master that answers)."""
    from redis.sentinel import MasterNotFoundError, Sentinel

    try:
        _, port = Sentinel([("127.0.0.1", sentinel_port)]).discover_master(name)  # type: ignore[no-untyped-call]
    except MasterNotFoundError:
        return None
    return int(port)


def haproxy_config(directory: Path, port: int, replicas: Sequence[int]) -> Path:
    """deploy/haproxy.cfg with the given replica ports and its listening port."""
    template = (Path(__file__).resolve().parent.parent / "deploy" / "haproxy.cfg").read_text(encoding="utf-8")
    lines = template.splitlines(keepends=True)
    models = [line for line in lines if "# REPLICAS " in line]
    servers = "".join(line.replace("# REPLICAS ", "").replace("PORT", str(p)) for line in models for p in replicas)
    text = "".join(servers if line == models[0] else line for line in lines
                   if line not in models[1:] and not line.lstrip().startswith("server "))
    text = text.replace("bind 127.0.0.1:8700", f"bind 127.0.0.1:{port}")
    path = directory / "haproxy.cfg"
    path.write_text(text, encoding="utf-8")
    return path


@contextmanager
def haproxy(directory: Path, replicas: Sequence[int]) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """HAProxy balancing across ``replicas`` with deploy/haproxy.cfg, on a free loopback port: the port and
    the process (its stderr says when a replica goes down or up)."""
    port = free_port()
    config = haproxy_config(directory, port, replicas)
    proc = start([_program("haproxy"), "-db", "-f", str(config)], port, capture_stderr=True)
    try:
        yield port, proc
    finally:
        stop(proc)


def nginx_config(directory: Path, port: int, replicas: Sequence[int]) -> Path:
    """deploy/nginx.conf's load-balancing section around the given replica ports, runnable unprivileged."""
    template = (Path(__file__).resolve().parent.parent / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    lines = [line for line in template.splitlines(keepends=True) if "# REPLICAS " in line]
    servers = "".join(line.replace("# REPLICAS ", "").replace("PORT", str(p)) for line in lines for p in replicas)
    template = template.replace(lines[0], servers)
    for line in lines[1:]:
        template = template.replace(line, "")
    text = (template
            .replace("listen 127.0.0.1:8700;", f"listen 127.0.0.1:{port};")
            .replace("PREFIX", str(directory)))
    path = directory / "nginx.conf"
    path.write_text(text, encoding="utf-8")
    return path


@contextmanager
def nginx(directory: Path, replicas: Sequence[int]) -> Iterator[int]:
    """nginx balancing across ``replicas`` on a free loopback port."""
    port = free_port()
    config = nginx_config(directory, port, replicas)
    proc = start([_program("nginx"), "-p", str(directory), "-c", str(config), "-e", str(directory / "error.log")],
                 port)
    try:
        yield port
    finally:
        stop(proc)


def gateway_config(directory: Path, redis_port: int, extra: str = "", mcp: str = "", state: str = "",
                   auto_approve: Sequence[str] = ("peer__steps", "peer__echo", "peer__write_file")) -> Path:
    """A replica's codeward.toml: the team's users (:data:`USERS`), the audit, Redis state, the peer server
    (``extra``: more of its table; ``mcp``: more of ``[mcp]``; ``state``: the ``[state]`` lines naming
    Redis, instead of ``redis_port``)."""
    users_file(directory / "users.toml")
    path = directory / "codeward.toml"
    state = state or f'url = "redis://127.0.0.1:{redis_port}/0"'
    path.write_text(f"""
[audit]
users_file = "users.toml"
log_dir = "audit"

[state]
{state}
lease = 2

[mcp]
auto_approve = {json.dumps(list(auto_approve))}
{mcp}

[mcp.servers.peer]
command = {sys.executable!r}
args = [{PEER!r}, "stdio"]
{extra}
""", encoding="utf-8")
    return path


def start_replica(config: Path, port: int | None = None, *, args: Sequence[str] = (),
                  env: Mapping[str, str] | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """One ``codeward gateway --http`` replica on a loopback port (``args``: more options, like ``--control``)."""
    port = port or free_port()
    proc = start([sys.executable, "-m", "codeward", "gateway", "--config", str(config), "--http", "--port", str(port),
                  "--token-env", "REPLICA_TOKEN", *args], port,
                 {"REPLICA_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1", **(env or {})}, cwd=config.parent, timeout=60,
                 capture_stderr=True)
    return proc, port


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the replica and everything it started: a crash, not a shutdown."""
    os.killpg(proc.pid, 9)
    proc.wait(timeout=10)


def wait_ready(port: int, timeout: float = 60.0) -> None:
    """Return once the replica on ``port`` says it is ready (``/readyz``: its upstream connected, Redis up)."""
    import time

    import httpx2 as httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"the replica on port {port} was not ready within {timeout}s")


def start_replicas(config: Path, count: int) -> list[tuple[subprocess.Popen[bytes], int]]:
    """``count`` replicas started side by side (each takes seconds to import and connect its upstream),
    returned once each is ready."""
    from concurrent.futures import ThreadPoolExecutor

    def ready_replica(_: int) -> tuple[subprocess.Popen[bytes], int]:
        proc, port = start_replica(config)
        try:
            wait_ready(port)
        except TimeoutError:
            stop(proc)
            raise
        return proc, port

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(ready_replica, range(count)))


@contextmanager
def team_deployment(directory: Path, count: int = 2) -> Iterator[dict[str, Any]]:
    """Redis, ``count`` gateway replicas with the team's users (:data:`USERS`) and nginx with
    ``deploy/nginx.conf`` in front: ``url`` (nginx's ``/mcp``), ``replicas`` [(process, port)], ``ports``,
    ``redis`` (its port), ``config``, ``tmp``."""
    with redis_server(directory) as redis_port:
        config = gateway_config(directory, redis_port)
        replicas = start_replicas(config, count)
        try:
            (directory / "nginx").mkdir()
            with nginx(directory / "nginx", [port for _, port in replicas]) as port:
                yield {"url": f"http://127.0.0.1:{port}/mcp", "replicas": replicas, "redis": redis_port,
                       "tmp": directory, "config": config, "ports": [p for _, p in replicas]}
        finally:
            for proc, _ in replicas:
                stop(proc)
