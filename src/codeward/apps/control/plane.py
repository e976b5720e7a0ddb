"""The control plane of one command run (``chat``, ``ask``, ``serve``, ``gateway``): logs, API, glue.

:func:`control_plane` is entered around a session. Without ``--control`` or ``--logs`` it is
inert and every method hands back what it was given, so the commands read the same either
way. With ``--logs`` it writes the session logs; with ``--control`` it also serves the Hook
API and console, and tool approvals race the terminal against the console.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeward.approval.askers import ask_mcp_client, confirm_with_client
from codeward.approval.desk import ApprovalDesk
from codeward.approval.policy import ConfirmCallback, approve_everything, deny_unlisted
from codeward.apps.control.board import beads_board
from codeward.apps.control.chat_driver import ChatDriver
from codeward.apps.control.client import token_file
from codeward.apps.control.defaults import DEFAULT_APPROVAL_TIMEOUT, ControlOptions
from codeward.apps.control.gui import GuiQueue, StateDriver
from codeward.apps.control.observe import Observe, ObservedModelClient, SessionObserver
from codeward.apps.control.replicas import ReplicaApprovals
from codeward.apps.control.server import ControlServer
from codeward.apps.control.session_logs import SessionLogs
from codeward.apps.control.state import ControlState
from codeward.audit.metrics import CallMetrics
from codeward.kernel.chain import Middleware
from codeward.kernel.redaction import Redactor
from codeward.kernel.user_dirs import data_home as default_home

if TYPE_CHECKING:
    from codeward.apps.agent.conversation import Conversation
    from codeward.apps.agent.session import AgentSession
    from codeward.apps.agent.shell import ChatShell
    from codeward.apps.control.gui import GuiDriver
    from codeward.audit.setup import HttpAudit
    from codeward.gateway.gateway import Gateway
    from codeward.kernel.workspace import Workspace
    from codeward.serving.runtime import Serving
    from codeward.serving.shared_state.backend import StateBackend
    from codeward.serving.stack import Stack

SERVER_POLL_S = 1.0
EXIT_CODE = re.compile(r"(?:\[exit code (-?\d+)\]|EXIT CODE: (-?\d+))\s*$")
RUN_SHELL_OUTPUT = re.compile(r"\ASTDOUT:\n(?P<out>.*)\nSTDERR:\n(?P<err>.*)\nEXIT CODE: -?\d+\s*\Z", re.S)

CommandRunner = Callable[[str, Path], str]


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


@dataclass
class ControlPlane:
    """What one run reports to, and how its approvals are asked. Inert when both parts are off."""

    label: str
    session_id: str
    state: ControlState | None = None
    server: ControlServer | None = None
    logs: SessionLogs | None = None
    approval_timeout: float | None = DEFAULT_APPROVAL_TIMEOUT
    observer: SessionObserver = field(init=False)
    _clients: list[ObservedModelClient] = field(default_factory=list, init=False)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list, init=False)
    _gui: GuiQueue | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.observer = SessionObserver(self.state, self.logs)

    @property
    def active(self) -> bool:
        return self.state is not None or self.logs is not None

    # -- approvals -------------------------------------------------------------------------------

    def approvals(self, terminal: ConfirmCallback | None = None, *, fallback: ConfirmCallback = deny_unlisted,
                  notify: Callable[[str], None] | None = None) -> ConfirmCallback:
        """The confirm callback for this run: the terminal raced against the console when the
        API is served, else the terminal (or ``fallback`` when there is none)."""
        if self.state is None or terminal is approve_everything:  # nobody needs asking
            return terminal or fallback
        if terminal is confirm_with_client:  # it says "no" when it cannot ask; in a race it must abstain
            terminal = ask_mcp_client
        # a person at a terminal may take their time; without one, silence ends in a denial
        timeout = None if terminal is not None and terminal is not ask_mcp_client else self.approval_timeout
        return ApprovalDesk(self.state, terminal=terminal, notify=notify, timeout=timeout)

    # -- watching ----------------------------------------------------------------------------------

    def watch_agent(self, session: AgentSession, conversation: Conversation, chat_session: str | None = None) -> None:
        """Report this agent session's tool calls, model requests and turns; show its servers."""
        if not self.active:
            return
        observer = self.observer

        def observed(profile: Any) -> Any:
            client = ObservedModelClient(profile, observer)
            self._clients.append(client)
            return client

        session.client_factory = observed
        session.client = observed(session.profile)
        conversation.listeners.append(observer.entry)
        if self.state is not None:
            profile = session.profile
            self.state.set_project({
                "label": self.label, "roots": [str(r) for r in session.workspace.roots],
                "model": profile.model, "profile": profile.name, "base_url": profile.base_url,
                "tools": len(session.surface.tool_infos()),
                "config": str(session.config.path) if session.config.path else None,
                "chat_session": chat_session, "logs": str(self.logs.directory) if self.logs else None,
            })
            self.state.set_session({"id": chat_session or self.session_id, "model": profile.model,
                                    "entries": [turn.to_dict() for turn in conversation.turns]})
            self.watch_gateway(session.gateway)

    def drive(self, driver: GuiDriver | None = None, workspace: Workspace | None = None) -> None:
        """Let ``/api/gui`` drive this run through ``driver`` (approvals, tabs and events only when
        None), its tasks applied on the running loop; ``workspace``'s beads become the board."""
        if self.state is None:
            return
        if self._gui is not None:
            self._tasks.append(asyncio.get_running_loop().create_task(self._gui.aclose()))
        self._gui = GuiQueue(self.state, driver or StateDriver(self.state), asyncio.get_running_loop())
        self._gui.start()
        self.state.gui = self._gui
        if workspace is not None:
            self.state.board = lambda: beads_board(workspace)

    def drive_chat(self, shell: ChatShell) -> None:
        """``/api/gui`` drives this chat: its fields, messages, cancel, reset and approvals."""
        if self.state is not None:
            self.drive(ChatDriver(self.state, shell), shell.session.workspace)

    def middleware(self) -> list[Middleware]:
        """What this plane adds to a stack's chain: the call observer, when anything is watching."""
        return [Observe(self.observer)] if self.active else []

    def attach_server(self, stack: Stack, serving: Serving, state: StateBackend | None,
                      audit: HttpAudit | None) -> None:
        """Watch a serving runtime (:func:`codeward.serving.runtime.serve_mcp`): the project it serves, a
        gateway's upstream servers, every replica's approvals (with shared state), ``/api/gui``."""
        if self.state is None:
            return
        roots = [str(root) for root in stack.workspace.roots]
        if audit is not None and audit.users.path is not None:  # a team's people sign in with their own tokens
            self.state.users = audit.users
        if state is not None and state.shared:  # the console answers approvals waiting on any replica
            self.state.replicas = ReplicaApprovals(state, audit.log if audit is not None else None,
                                                   asyncio.get_running_loop(), stack.services.find(CallMetrics))
        if stack.gateway is not None and serving.upstreams:
            self.watch_gateway(stack.gateway, roots=roots, transport=serving.transport)
        else:
            self.state.set_project({"label": self.label, "roots": roots, "tools": len(stack.catalog),
                                    "transport": serving.transport, "approvals": serving.approvals,
                                    "logs": str(self.logs.directory) if self.logs else None})
            self.state.set_session({"id": self.session_id, "entries": []})
        self.drive(workspace=stack.workspace)

    def watch_gateway(self, gateway: Gateway, **project: Any) -> None:
        """Keep the state's list of upstream servers current (polled on the gateway's own loop);
        ``project`` fields, when given, describe a gateway run (roots, transport...)."""
        if self.state is None:
            return
        state = self.state
        if project:
            state.set_project({"label": self.label, **project, "servers": len(gateway.statuses()),
                               "tools": len(gateway.tool_infos()),
                               "logs": str(self.logs.directory) if self.logs else None})
            state.set_session({"id": self.session_id, "entries": []})

        async def poll() -> None:
            while True:
                with contextlib.suppress(Exception):
                    state.set_servers([_status_dict(s) for s in gateway.statuses()])
                await asyncio.sleep(SERVER_POLL_S)

        self._tasks.append(asyncio.get_running_loop().create_task(poll()))

    def command_runner(self, run: CommandRunner) -> CommandRunner:
        """Wrap the chat's shell-command runner so each command lands in ``clicalls.log``."""
        if not self.active:
            return run
        observer = self.observer

        def logged(command: str, cwd: Path) -> str:
            started = time.perf_counter()
            output = run(command, cwd)
            code = EXIT_CODE.search(output)
            parts = RUN_SHELL_OUTPUT.match(output)
            stdout, stderr = (parts.group("out"), parts.group("err")) if parts else (output, "")
            observer.cli_call(["bash", "-c", command], cwd=cwd, stdout=stdout, stderr=stderr,
                              latency_s=time.perf_counter() - started,
                              exit_code=int(code.group(1) or code.group(2)) if code else None)
            return output

        return logged

    async def aclose(self) -> None:
        if self._gui is not None:
            await self._gui.aclose()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for client in self._clients:
            with contextlib.suppress(Exception):
                await client.close()
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)
        elif self.state is not None:
            self.state.close()
        if self.logs is not None:
            self.logs.close()


@asynccontextmanager
async def control_plane(options: ControlOptions | None, label: str, *,
                        announce: Callable[[str], None] | None = None,
                        data_home: Path | None = None) -> AsyncIterator[ControlPlane]:
    """The plane for a command run; inert unless ``options`` ask to serve the API or write logs."""
    options = options or ControlOptions()
    session_id = new_session_id()
    if not (options.serve or options.logs):
        yield ControlPlane(label, session_id)
        return
    home = data_home or default_home()
    logs = SessionLogs.for_session(home / "logs", session_id, Redactor())
    logs.watch_subprocesses()
    plane = ControlPlane(label, session_id, logs=logs, approval_timeout=options.approval_timeout)
    say = announce or _stderr
    try:
        if options.serve:
            state = ControlState(label)
            server = ControlServer(state, host=options.host, port=options.port, allow_remote=options.allow_remote,
                                   logs=logs, token_dir=token_file(0, home).parent)
            await asyncio.to_thread(server.start)
            plane = ControlPlane(label, session_id, state=state, server=server, logs=logs,
                                 approval_timeout=options.approval_timeout)
            say(f"[codeward] control API at {server.url} (token in {server.token_file_path})\n"
                f"[codeward] web console: {server.console_url}")
        say(f"[codeward] session logs: {logs.directory}")
        yield plane
    finally:
        await plane.aclose()
        logs.close()


def _status_dict(status: Any) -> dict[str, Any]:
    values = asdict(status)
    values["state"] = str(getattr(status.state, "value", status.state))
    return values


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
