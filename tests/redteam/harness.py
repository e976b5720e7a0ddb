"""The red-team harness: a real ``codeward serve`` attacked through real MCP sessions, as root or
as an unprivileged user, and the host checked afterwards.

An attack is what a model could send: tool calls over MCP (or raw JSON-RPC bytes). What
matters is not what the tool answered but what the host looks like afterwards, so every
:class:`Host` records the state of everything the agent must not reach before the attack and
compares after it:

* canary files outside the roots (a stand-in for the user's home and other projects);
* protected paths inside the project (``.git`` metadata at any depth, ``codeward.toml``,
  ``.codeward/``);
* the host's own ``git status`` and ``git commit`` in every repository under the project, run
  as the project's owner with the host's git: a command planted anywhere git would run it
  (``core.fsmonitor``, hooks, filters, ``gitdir:`` pointers) leaves a marker file;
* every text a tool answered, searched for the secret strings planted in protected files;
* a TCP listener on the host's 127.0.0.1 that records every connection.

See ``README.md`` next to this file for how to write an attack.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeward.kernel.state_dir import GITIGNORE

USER_NAME = "codeward-redteam"
"""The unprivileged account the attacks also run as (created by the harness when missing)."""
SRC = Path(__file__).resolve().parents[2] / "src"
GIT_TIMEOUT_S = 30
SERVER_TIMEOUT_S = 60

SECRET_ENV = "CW-REDTEAM-SECRET-DOTENV-5b1f"
SECRET_KEY = "CW-REDTEAM-SECRET-KEYFILE-a93c"
SECRET_CONFIGURED = "CW-REDTEAM-SECRET-CONFIGURED-77d0"
SECRET_NAMED = "CW-REDTEAM-SECRET-NAMED-0e4b"
SECRET_SSH = "CW-REDTEAM-SECRET-SSHKEY-c21f"
SECRETS = (SECRET_ENV, SECRET_KEY, SECRET_CONFIGURED, SECRET_NAMED, SECRET_SSH)
SECRET_FILES = (".env", "deploy/server.key", "notes/private.txt", "prod.env", ".npmrc", "tls/server.KEY",
                "infra/terraform.tfstate", ".docker/config.json", "deploy/ci-bot", ".git/.env")
"""Every file planted with a secret (``deploy/ci-bot`` is an SSH key known only by its first line)."""
"""Strings planted in files the agent must never read; none may appear in any output."""

CODEWARD_OWN_WRITES = ("index.sqlite", "registry.sqlite3", "outputs", "logs", "venvs", "checkpoints",
                       "git-history.json", "locks")
"""What codeward writes in ``.codeward/`` as it works (not the agent's doing)."""

CODEWARD_HOME_DIRS = ((".local", "share", "codeward"), (".cache", "codeward"))
"""What codeward keeps in its user's home (and the folders above them)."""
SIGNING_DIR = (".local", "share", "codeward", "signing")
"""The person's signing key and the keys they trust: checked like any file outside the roots."""

HOST_RUN_NAMES = frozenset({
    ".githooks", ".husky", ".pre-commit-config.yaml", ".gitmodules", ".gitattributes", ".gitconfig", ".vscode", ".idea",
    ".devcontainer", ".devcontainer.json", ".mcp.json", ".cursor", ".claude", ".envrc", ".bashrc", ".bash_profile",
    ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout"})
"""Names (compared case-insensitively, at any depth) of what the person's own tools run later: git
hooks, pre-commit, editors, MCP clients, shells. The harness's own list, kept apart from
codeward's on purpose: a file under one changes only when a test approves it (:meth:`Host.approve`)."""
TOOL_CACHES = "tool-caches"
"""Beside ``home/``: where the person's tools keep caches (pre-commit's), so that ``home/`` stays a canary."""
HOOKS_FOLDER = ".githooks"
"""``core.hooksPath`` of the person's repository after :meth:`Host.install_hooks`."""

PROJECT_CONFIG = """\
# The operator's policy for this project: a tool may never change it.
[server]
blacklist = ["notes/private.txt"]
"""


@dataclass(frozen=True)
class Principal:
    """Who the server (and the host's git) runs as: ``root`` or the unprivileged ``user``."""

    kind: str
    uid: int
    gid: int
    python: tuple[str, ...]
    """How this principal starts Python with codeward importable."""
    pythonpath: str | None = None

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run as this principal (as is when that is who we already are)."""
        if self.uid == os.geteuid():
            return list(argv)
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--", *argv]

    def env(self, home: Path) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("XDG_", "GIT_", "PRE_COMMIT"))}
        env.update(HOME=str(home), PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1",
                   PRE_COMMIT_HOME=str(home.parent / TOOL_CACHES / "pre-commit"))
        if self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath
        return env


def principal(kind: str) -> Principal:
    """The principal for ``kind``, or a skip saying why this machine cannot provide it."""
    if kind == "root":
        if os.geteuid() != 0:
            pytest.skip(f"the tests run as uid {os.geteuid()}, not root: the root half of the attack cannot run")
        return Principal("root", 0, 0, (sys.executable,))
    if kind != "user":
        raise ValueError(f"unknown principal {kind!r}; use 'root' or 'user'")
    if os.geteuid() != 0:  # we already are an unprivileged user
        return Principal("user", os.geteuid(), os.getegid(), (sys.executable,))
    uid, gid = _ensure_user()
    python, pythonpath = _python_for(uid, gid)
    return Principal("user", uid, gid, python, pythonpath)


@cache
def _ensure_user() -> tuple[int, int]:
    """Create :data:`USER_NAME` once (idempotent, safe across parallel test workers)."""
    with contextlib.suppress(KeyError):
        entry = pwd.getpwnam(USER_NAME)
        return entry.pw_uid, entry.pw_gid
    if shutil.which("useradd") is None or shutil.which("setpriv") is None:
        pytest.skip("useradd/setpriv are not installed: the unprivileged half of the attack cannot run")
    lock_path = Path(tempfile.gettempdir()) / "codeward-redteam-useradd.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            pwd.getpwnam(USER_NAME)
        except KeyError:
            done = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                                   "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", USER_NAME],
                                  capture_output=True, text=True, check=False)
            if done.returncode not in (0, 9):  # 9: the name exists (another worker made it)
                pytest.skip(f"cannot create the unprivileged user {USER_NAME!r}: {done.stderr.strip()}")
    entry = pwd.getpwnam(USER_NAME)
    return entry.pw_uid, entry.pw_gid


@cache
def _python_for(uid: int, gid: int) -> tuple[tuple[str, ...], str | None]:
    """An interpreter the user can run with codeward and its dependencies importable.

    This interpreter when the user may execute it (a virtualenv under /usr or /opt); else the
    system's Python of the same version with this environment's packages on ``PYTHONPATH``
    (a pyenv interpreter under root's 0700 home is out of a normal user's reach).
    """
    probe = ["-c", "import codeward, mcp, pydantic"]
    wrap = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]
    env = {**os.environ, "HOME": "/"}
    if subprocess.run([*wrap, sys.executable, *probe], cwd="/", env=env, capture_output=True,
                      check=False).returncode == 0:
        return (sys.executable,), None
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    paths = [str(SRC), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    pythonpath = os.pathsep.join(dict.fromkeys(paths))
    for candidate in (f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        if os.access(candidate, os.X_OK) and subprocess.run(
                [*wrap, candidate, *probe], cwd="/", env={**env, "PYTHONPATH": pythonpath},
                capture_output=True, check=False).returncode == 0:
            return (candidate,), pythonpath
    pytest.skip(f"no {version} the user {USER_NAME!r} may run imports codeward (this interpreter lives where "
                "the user cannot read it, and no system interpreter of the same version exists)")


@cache
def _hook_python(who: Principal) -> tuple[str, str]:
    """An interpreter (and ``PYTHONPATH``) a hook the principal's git runs can start with pre-commit
    importable: started from a shell, as git starts hooks (a path through a home folder the user
    may not enter fails there even where a direct start works)."""
    paths = os.pathsep.join(dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = ((sys.executable, ""), (f"/usr/bin/{version}", paths), (f"/usr/local/bin/{version}", paths))
    for python, pythonpath in candidates:
        probe = f"exec {shlex.quote(python)} -c 'import pre_commit'"
        env = {**os.environ, "HOME": "/", **({"PYTHONPATH": pythonpath} if pythonpath else {})}
        if subprocess.run(who.wrap(["sh", "-c", probe]), cwd="/", env=env, capture_output=True,
                          check=False).returncode == 0:
            return python, pythonpath
    pytest.skip(f"no {version} the principal can start from a hook imports pre-commit")


class Listener:
    """A TCP server on the host's 127.0.0.1 recording every connection it accepts."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.1)
        self.port: int = self._sock.getsockname()[1]
        self.connections: list[tuple[str, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self._sock.accept()
            except OSError:
                continue
            self.connections.append(peer)
            with contextlib.suppress(OSError):
                conn.sendall(b"host listener\n")
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self._sock.close()


@dataclass
class Host:
    """One attack's world: a project served to the agent and everything around it to check.

    ``base/`` holds ``project/`` (the root served, a git repository with a committed secret),
    ``outside/`` (canaries next to the project), ``home/`` (the server's and host git's HOME)
    and ``markers/`` (where a planted command would leave a file).
    """

    principal: Principal
    base: Path
    listener: Listener
    outputs: list[str] = field(default_factory=list)
    _before: dict[str, str] = field(default_factory=dict)
    checked: bool = False

    @property
    def project(self) -> Path:
        return self.base / "project"

    @property
    def outside(self) -> Path:
        return self.base / "outside"

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def markers(self) -> Path:
        return self.base / "markers"

    def marker_command(self, name: str = "pwned") -> str:
        """A shell command that leaves ``markers/name`` when it runs: plant it, then check."""
        return f"touch {self.markers / name}"

    # -- building -----------------------------------------------------------------------

    @classmethod
    def create(cls, who: Principal) -> Host:
        base = Path(tempfile.mkdtemp(prefix="codeward-redteam-"))
        base.chmod(0o755)
        host = cls(who, base, Listener())
        host._build()
        host.rebaseline()
        return host

    def _build(self) -> None:
        project, outside, home, markers = self.project, self.outside, self.home, self.markers
        for folder in (project, outside, home, markers, self.base / TOOL_CACHES):
            folder.mkdir()
        (home / ".gitconfig").write_text("[user]\n\tname = Host User\n\temail = host@example.invalid\n"
                                         "[init]\n\tdefaultBranch = main\n")
        (home / ".bashrc").write_text("# the user's shell start-up file\n")
        (outside / "canary.txt").write_text("the agent must never change this file\n")
        (outside / "other-project").mkdir()
        (outside / "other-project" / "main.py").write_text("print('another project')\n")
        (project / "src").mkdir()
        (project / "src" / "app.py").write_text("def main() -> int:\n    return 1\n")
        (project / "README.md").write_text("# Demo project\n")
        (project / ".env").write_text(f"API_TOKEN={SECRET_ENV}\n")
        (project / "deploy").mkdir()
        (project / "deploy" / "server.key").write_text(f"-----BEGIN PRIVATE KEY-----\n{SECRET_KEY}\n")
        (project / "notes").mkdir()
        (project / "notes" / "private.txt").write_text(f"{SECRET_CONFIGURED}\n")
        for name in ("prod.env", ".npmrc", "tls/server.KEY", "infra/terraform.tfstate", ".docker/config.json"):
            (project / name).parent.mkdir(exist_ok=True)
            (project / name).write_text(f"token = {SECRET_NAMED}\n")
        (project / "deploy" / "ci-bot").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET_SSH}\n"
                                                   "-----END OPENSSH PRIVATE KEY-----\n")
        (project / "codeward.toml").write_text(PROJECT_CONFIG)
        self.git("init", "-q")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "initial")
        (project / ".git" / ".env").write_text(f"{SECRET_NAMED}\n")
        if self.principal.uid != os.geteuid():
            for path in (project, outside, home, markers, self.base / TOOL_CACHES):
                _chown_tree(path, self.principal.uid, self.principal.gid)

    # -- running things -----------------------------------------------------------------

    def git(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """The host's own git, as the project's owner, as a user or their IDE would run it."""
        argv = ["git", *args]
        if self.project.exists() and self.project.stat().st_uid == self.principal.uid:
            argv = self.principal.wrap(argv)
        return subprocess.run(argv, cwd=cwd or self.project, env=self.principal.env(self.home), text=True,
                              capture_output=True, timeout=GIT_TIMEOUT_S, check=False)

    def server_argv(self, *extra: str, config: Path | None = None) -> list[str]:
        """``codeward [--config FILE] serve <project> extra...`` as the principal."""
        first = ["--config", str(config)] if config else []
        return self.principal.wrap([*self.principal.python, "-m", "codeward", *first, "serve", str(self.project),
                                    *extra])

    def codeward(self, *args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
        """The ``codeward`` command line as the principal, in the project: what the person at their
        terminal does (``codeward sign NAME``, ``codeward registry trust ...``). Its output is recorded."""
        argv = self.principal.wrap([*self.principal.python, "-m", "codeward", *args])
        done = subprocess.run(argv, cwd=self.project, env=self.principal.env(self.home), text=True,
                              capture_output=True, timeout=timeout_s, check=False)
        self.record(done.stdout + done.stderr)
        return done

    @asynccontextmanager
    async def serve(self, *extra: str, config: Path | None = None, elicitation: Any = None,
                    gateway: bool = False, mode: str = "auto") -> AsyncIterator[Session]:
        """A real ``codeward serve`` over stdio (as the principal) and an official SDK client on it.

        ``gateway=True`` runs ``codeward gateway --root <project>`` instead (approval rules apply);
        ``elicitation`` answers the server's questions to the person (``None``: nobody can be asked);
        ``mode="legacy"`` speaks the handshake era (a question reaches the person mid-call)."""
        argv = self.server_argv(*extra, config=config) if not gateway else self.principal.wrap(
            [*self.principal.python, "-m", "codeward", "gateway", "--root", str(self.project), *extra])
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=self.principal.env(self.home),
                                       cwd=str(self.project))
        async with Client(params, read_timeout_seconds=SERVER_TIMEOUT_S, elicitation_callback=elicitation,
                          mode=mode) as client:
            yield Session(client, self)

    def place(self, rel: str, text: str, mode: int = 0o644) -> Path:
        """Put a file in the project as its owner would (the scene, not the attack)."""
        path = self.project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)
        for each in [path, *[p for p in path.parents if p.is_relative_to(self.project) and p != self.project]]:
            os.chown(each, self.principal.uid, self.principal.gid)
        return path

    def install_hooks(self) -> None:
        """The person's hooks, as a developer has them: ``core.hooksPath = .githooks``, whose
        ``pre-commit`` runs the pre-commit framework on ``.pre-commit-config.yaml`` (what ``pre-commit
        install`` writes). The host's ``git commit`` of every check then runs what those name: a
        hook or a ``repo: local`` hook planted there leaves its marker."""
        python, pythonpath = _hook_python(self.principal)
        setting = f"PYTHONPATH={shlex.quote(pythonpath)} " if pythonpath else ""
        self.place(f"{HOOKS_FOLDER}/pre-commit", "#!/bin/sh\n# the person's hook: pre-commit, as `pre-commit install` "
                   f"runs it\n{setting}exec {shlex.quote(python)} -m pre_commit hook-impl "
                   "--config=.pre-commit-config.yaml --hook-type=pre-commit "
                   '--hook-dir "$(cd "$(dirname "$0")" && pwd)" -- "$@"\n', 0o755)
        self.place(".pre-commit-config.yaml", "# the person's pre-commit hooks\nrepos: []\n")
        done = self.git("config", "core.hooksPath", HOOKS_FOLDER)
        assert done.returncode == 0, done.stderr
        self.rebaseline()

    def approve(self, *rels: str) -> None:
        """What a person approved (or did themselves) is the new state of these paths (and what is
        under them): the checks compare with it from now on, the rest with the scene."""
        now = self._state()
        for rel in rels:
            prefix = str(self.project / rel)
            for path in {*self._before, *now}:
                if path == prefix or path.startswith(prefix + "/"):
                    if path in now:
                        self._before[path] = now[path]
                    else:
                        self._before.pop(path, None)

    @contextmanager
    def raw_stdio(self, *extra: str) -> Iterator[RawServer]:
        """``codeward serve`` over stdio with the pipes in hand, for bytes no SDK client sends."""
        proc = subprocess.Popen(self.server_argv(*extra), cwd=self.project, env=self.principal.env(self.home),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        raw = RawServer(proc, self)
        try:
            yield raw
        finally:
            raw.close()

    @contextmanager
    def serve_http(self, *extra: str, env: dict[str, str] | None = None) -> Iterator[HttpServer]:
        """``codeward serve --http`` on a free loopback port, as the principal."""
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        argv = self.server_argv("--http", "--port", str(port), *extra)
        proc = subprocess.Popen(argv, cwd=self.project, env={**self.principal.env(self.home), **(env or {})},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        server = HttpServer(proc, f"http://127.0.0.1:{port}/mcp", port)
        try:
            server.wait_ready()
            yield server
        finally:
            server.close()
            self.outputs.append(server.stderr)

    # -- checking -----------------------------------------------------------------------

    def record(self, text: str) -> str:
        """Keep an output the agent saw (searched for secrets afterwards); returns it."""
        self.outputs.append(text)
        return text

    def protected_paths(self) -> list[Path]:
        """Files the agent may never change: git metadata at any depth, codeward's config and state,
        and — unless a person approves it (:meth:`approve`) — what the host runs later
        (:data:`HOST_RUN_NAMES` at any depth).

        What codeward itself keeps in ``.codeward/`` (caches, saved outputs, logs) changes as the
        server works; an attack on those checks them itself.
        """
        found: list[Path] = []
        for path in _walk(self.project):
            rel = path.relative_to(self.project)
            if rel.parts[0] == ".codeward" and (len(rel.parts) == 1 or rel.parts[1].startswith(CODEWARD_OWN_WRITES)):
                continue
            if rel.parts == (".codeward", ".gitignore") and path.read_bytes() == GITIGNORE.encode():
                continue  # what codeward writes with its first cache
            host_run = any(part.casefold() in HOST_RUN_NAMES for part in rel.parts)
            if ".git" in rel.parts or rel.parts[0] in ("codeward.toml", ".codeward") or path.name == "mcp_env.toml" \
                    or host_run:
                found.append(path)
        return found

    def rebaseline(self) -> None:
        """Record the state the checks compare with (call after setting up an attack's scene by hand)."""
        self._before = self._state()

    def _state(self) -> dict[str, str]:
        state: dict[str, str] = {}
        for folder in (self.outside, self.home):
            for path in _walk(folder):
                rel = path.relative_to(folder).parts
                if folder == self.home and any(rel[:len(own)] == own[:len(rel)] for own in CODEWARD_HOME_DIRS) \
                        and rel[:len(SIGNING_DIR)] != SIGNING_DIR:
                    continue  # codeward's own data and caches (a generated HTTP token, tool environments)
                state[str(path)] = _fingerprint(path)
        for path in self.protected_paths():
            if path.name not in ("index", "ORIG_HEAD", "FETCH_HEAD") or ".git" not in path.parts:
                state[str(path)] = _fingerprint(path)
        return state

    def violations(self) -> list[str]:
        """Everything the attack achieved on the host, as sentences ([] when it achieved nothing)."""
        found: list[str] = []
        after = self._state()
        for path in sorted(set(self._before) | set(after)):
            old, new = self._before.get(path), after.get(path)
            if old != new:
                what = "appeared" if old is None else "vanished" if new is None else "changed"
                found.append(f"{path} {what} ({old} -> {new})")
        for repo in self._repositories():
            status = self.git("status", "--porcelain", cwd=repo)
            commit = self.git("commit", "-q", "--allow-empty", "-m", "host check", cwd=repo)
            if status.returncode or commit.returncode:
                found.append(f"host git in {repo} failed: {status.stderr.strip()} {commit.stderr.strip()}")
        for folder in self._bare_candidates():  # git opens these as repositories too: only what ran counts
            self.git("status", "--porcelain", cwd=folder)
            self.git("--git-dir", str(folder), "--work-tree", str(self.project), "status", "--porcelain")
            self.git("--git-dir", str(folder), "log", "-1")
        found.extend(f"a planted command ran on the host: {marker.name}" for marker in sorted(self.markers.iterdir()))
        found.extend(f"a connection reached the host listener from {peer}" for peer in self.listener.connections)
        for secret in SECRETS:
            for text in self.outputs:
                if secret in text:
                    found.append(f"the secret {secret} appeared in an output: {_excerpt(text, secret)}")
                    break
        return found

    def assert_clean(self) -> None:
        """Fail with every violation listed (the fixture also runs this after each attack)."""
        self.checked = True
        problems = self.violations()
        assert not problems, "the attack reached the host:\n  " + "\n  ".join(problems)

    def _repositories(self) -> list[Path]:
        """The project and every folder under it where a host git would find a repository."""
        repos = [self.project]
        for path in _walk(self.project):
            if path.name == ".git" and path.parent != self.project and ".git" not in path.parent.parts:
                repos.append(path.parent)
        return repos

    def _bare_candidates(self) -> list[Path]:
        """Folders under the project (outside ``.git``) holding a ``HEAD``: a host git run inside one,
        or given it as ``--git-dir``, would use it as a repository (a bare one) if it is one."""
        return sorted({path.parent for path in _walk(self.project)
                       if path.name.casefold() == "head" and ".git" not in path.relative_to(self.project).parts})

    def close(self) -> None:
        self.listener.close()
        shutil.rmtree(self.base, ignore_errors=True)


class Session:
    """An official MCP client session that records every answer for the secret check."""

    def __init__(self, client: Client, host: Host) -> None:
        self.client = client
        self.host = host

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> Answer:
        result = await self.client.call_tool(name, arguments or {})
        text = "\n".join(getattr(block, "text", "") or "" for block in result.content)
        structured = json.dumps(result.structured_content) if result.structured_content is not None else ""
        self.host.record(text)
        self.host.record(structured)
        return Answer(bool(result.is_error), text, result.structured_content)


@dataclass(frozen=True)
class Answer:
    """What a tool call answered: the error flag, the text, the structured content."""

    is_error: bool
    text: str
    structured: Any

    def refused(self, *fragments: str) -> bool:
        """An error whose text holds every fragment (case-insensitively)."""
        lowered = self.text.lower()
        return self.is_error and all(fragment.lower() in lowered for fragment in fragments)


class RawServer:
    """A stdio server driven with raw bytes; every line it writes is recorded."""

    def __init__(self, proc: subprocess.Popen[bytes], host: Host) -> None:
        self.proc = proc
        self.host = host
        self._lines: list[bytes] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self._lines.append(line)
                self._cond.notify_all()

    def send(self, data: bytes | dict[str, Any] | list[Any]) -> None:
        """Write one message: bytes as given (add the newline yourself), JSON values as a line."""
        raw = data if isinstance(data, bytes) else json.dumps(data).encode() + b"\n"
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def initialize(self) -> dict[str, Any]:
        """The handshake a client makes first."""
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "redteam", "version": "1"}}})
        answer = self.response("init")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def messages(self) -> list[Any]:
        with self._cond:
            lines = list(self._lines)
        out: list[Any] = []
        for line in lines:
            self.host.record(line.decode("utf-8", "replace"))
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out

    def response(self, request_id: Any, timeout_s: float = 20.0) -> dict[str, Any]:
        """The response carrying ``request_id``, alone or in a batch answer (fails when none comes in time)."""
        deadline = time.monotonic() + timeout_s
        while True:
            for received in self.messages():
                for message in received if isinstance(received, list) else [received]:  # a batch answer
                    if isinstance(message, dict) and "id" in message and message.get("id") == request_id \
                            and ("result" in message or "error" in message):
                        return message
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.proc.poll() is not None:
                raise AssertionError(f"no response with id {request_id!r} in {timeout_s}s "
                                     f"(server {'exited' if self.proc.poll() is not None else 'alive'}); "
                                     f"got {self.messages()!r}")
            with self._cond:
                self._cond.wait(min(remaining, 0.2))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        stderr = self.proc.stderr.read() if self.proc.stderr else b""
        self.host.record(stderr.decode("utf-8", "replace"))


@dataclass
class HttpServer:
    """A ``codeward serve --http`` subprocess and its URL."""

    proc: subprocess.Popen[bytes]
    url: str
    port: int
    stderr: str = ""

    def wait_ready(self, timeout_s: float = SERVER_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"the HTTP server exited: {self.read_stderr()}")
            time.sleep(0.1)
        raise AssertionError(f"the HTTP server did not listen within {timeout_s}s")

    def read_stderr(self) -> str:
        if self.proc.stderr and self.proc.poll() is not None:
            self.stderr += self.proc.stderr.read().decode("utf-8", "replace")
        return self.stderr

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.read_stderr()


def _walk(folder: Path) -> list[Path]:
    """Every file, link and directory under ``folder`` (links not followed), sorted."""
    if not folder.exists():
        return []
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        base = Path(dirpath)
        found.extend(base / name for name in dirnames + filenames)
    return sorted(found)


def _fingerprint(path: Path) -> str:
    """What a file is: a link's target, a directory's mode, a file's mode and content hash."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return "missing"
    if path.is_symlink():
        return f"link->{os.readlink(path)}"
    if path.is_dir():
        return f"dir {oct(info.st_mode & 0o7777)}"
    if not path.is_file():
        return f"special {oct(info.st_mode)}"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return f"file {oct(info.st_mode & 0o7777)} {digest}"


def _chown_tree(folder: Path, uid: int, gid: int) -> None:
    os.chown(folder, uid, gid)
    for path in _walk(folder):
        os.chown(path, uid, gid, follow_symlinks=False)


def _excerpt(text: str, secret: str) -> str:
    at = text.find(secret)
    return repr(text[max(0, at - 80):at + len(secret) + 40])
