"""``codeward chat``: the interactive shell over an :class:`AgentSession`.

prompt_toolkit reads lines (with persistent input history); rich renders the answer as it
streams and a dim frame per tool call. Ctrl-C cancels the current response and keeps the
shell; Ctrl-D or ``:quit`` leaves. Lines starting with ``:`` are meta commands; ``CMD:`` lines
in a reply are offered as shell commands, run only after a yes, and their output goes to the
model with the next message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from codeward.approval.policy import ApprovalRequest
from codeward.apps.agent.conversation import Conversation, Turn
from codeward.apps.agent.history import SessionLog, list_sessions, sessions_dir
from codeward.apps.agent.loop import ToolLoop
from codeward.apps.agent.progress_lines import ProgressLines
from codeward.apps.agent.render import RichView
from codeward.apps.agent.session import AgentSession
from codeward.apps.agent.tracked import TrackedFiles, estimate_tokens
from codeward.config.model_profile import ModelConfigError
from codeward.gateway.config import server_from_url

HELP = """Commands:
  :help                         this help
  :model [NAME]                 show the model, or switch to a profile (or model id)
  :reset                        start a fresh conversation (tracked files stay)
  :history                      saved sessions (resume one with `codeward chat --resume ID`)
  :add PATH|GLOB ...            track files: content to the model once, then diffs when they change
  :drop PATH|GLOB ...           stop tracking them
  :files                        tracked files with sizes and token estimates
  :mcp connect <url> [alias] [--token-env VAR] [--header 'Name: value']...
                                connect an MCP server; its tools become alias__tool
  :mcp disconnect <alias>       disconnect it
  :mcp list                     connected servers: state, tools, latency
  :mcp tools                    every tool the model is offered
  :mcp tool <alias__name>       one tool's description and input schema
  :quit                         leave (Ctrl-D too); Ctrl-C cancels a response
Anything else is sent to the model. A reply line `CMD: <command>` is offered to run."""

CMD_LINE = re.compile(r"^\s*CMD:\s*`?(?P<cmd>[^`]+?)`?\s*$", re.MULTILINE)

Ask = Callable[[str], Awaitable[str]]


def extract_commands(text: str) -> list[str]:
    """The ``CMD:`` lines of a reply, in order."""
    return [m.group("cmd").strip() for m in CMD_LINE.finditer(text) if m.group("cmd").strip()]


def connect_arguments(words: list[str], environ: Mapping[str, str] | None = None) -> tuple[str, str | None,
                                                                                         dict[str, Any]]:
    """``:mcp connect``'s words as (url, alias, server options); a ValueError says what is wrong.

    ``--token-env VAR`` sends ``Authorization: Bearer $VAR`` (read now: an unset variable is an
    error here, not a 401 later); ``--header 'Name: value'`` (repeatable) sends any header.
    """
    env = os.environ if environ is None else environ
    positional: list[str] = []
    headers: dict[str, str] = {}
    options: dict[str, Any] = {}
    rest = list(words)
    while rest:
        word = rest.pop(0)
        if word in ("--token-env", "--header"):
            if not rest:
                raise ValueError(f"{word} needs a value")
            value = rest.pop(0)
            if word == "--token-env":
                if not env.get(value):
                    raise ValueError(f"--token-env {value}: that environment variable is empty or unset")
                options["auth_env"] = value
            else:
                name, sep, text = value.partition(":")
                if not sep or not name.strip() or not text.strip():
                    raise ValueError(f"--header {value!r}: write it as 'Name: value'")
                headers[name.strip()] = text.strip()
        elif word.startswith("--"):
            raise ValueError(f"unknown option {word}; use --token-env VAR or --header 'Name: value'")
        else:
            positional.append(word)
    if not 1 <= len(positional) <= 2:
        raise ValueError("usage: :mcp connect <url> [alias] [--token-env VAR] [--header 'Name: value']")
    if headers:
        options["headers"] = headers
    return positional[0], positional[1] if len(positional) == 2 else None, options


def shell_toolset_disabled(command: str, cwd: Path) -> str:
    """CMD: lines run only through the sandboxed run_shell tool; without it they do not run at all."""
    return (f"[codeward] not run: {command!r} needs the run_shell tool, and the 'shell' toolset is not enabled "
            "([server] toolsets in codeward.toml)")


@dataclass
class ChatShell:
    session: AgentSession
    conversation: Conversation
    log: SessionLog
    console: Console
    ask: Ask
    view: RichView = field(init=False)
    pending_exec: list[str] = field(default_factory=list)
    command_runner: Callable[[str, Path], str] = shell_toolset_disabled
    """Runs a confirmed ``CMD:`` line (the control plane wraps it to log the call)."""
    tracked: TrackedFiles = field(init=False)
    pending_files: list[str] = field(default_factory=list)
    """Files added since the last message: their content goes with the next one."""
    budget_tokens: int | None = None
    """``[agent] context_budget_tokens``; unset, the model's context window is the budget."""
    _offered: tuple[str, tuple[str, ...]] | None = field(default=None, init=False)
    inbox: deque[str | Callable[[], None]] = field(default_factory=deque, init=False)
    """Lines sent from outside (the Hook API), read like typed ones when the shell is idle, and
    changes to make between replies (a replaced conversation)."""
    on_reset: list[Callable[[], None]] = field(default_factory=list, init=False)
    """Called after :meth:`reset` (the control plane clears the session it shows)."""
    _wake: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    turn: asyncio.Future[Any] | None = field(default=None, init=False)
    """The running reply, which :meth:`cancel_turn` (Ctrl-C, the console) stops."""
    progress: Callable[[], ProgressLines] | None = None
    """Makes each message's progress lines (stderr: the request, the wait while no text has come, the
    time the answer took); ``None``: none (``-q``)."""
    _progress: ProgressLines | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.view = RichView(self.console)
        agent = self.session.config.agent
        base_dirs = agent.base_dirs
        resolved_dirs = None if base_dirs is None else tuple(
            (self.session.workspace.primary / d).resolve() for d in base_dirs)
        self.tracked = TrackedFiles(self.session.workspace, resolved_dirs)
        if "run_shell" in self.session.catalog:
            self.command_runner = self._run_in_sandbox
        self.budget_tokens = agent.context_budget_tokens

    def loop(self, message: str = "", typed: str = "") -> ToolLoop:
        """The loop for one message, offering the catalog that fits what the conversation leaves free
        (toolsets chosen by what the user ``typed`` and the tracked files' names)."""
        about = " ".join([typed, *self.tracked.paths()])
        surface, plan = self.session.offer(about, self.history_tokens() + estimate_tokens(message))
        shown = (plan.form, plan.toolsets)
        if shown != self._offered and (plan.form != "full" or self._offered is not None):
            self.view.notice(plan.summary())
        self._offered = shown
        self._progress = self.progress() if self.progress is not None else None
        return ToolLoop(self.session.client, surface, self.conversation, self.view,
                        self.session.context, self.session.settings, before_request=self._rebuild_allowlist,
                        after_tools=self.tracked.refresh, progress=self._progress)

    def _run_in_sandbox(self, command: str, cwd: Path) -> str:
        """``CMD:`` lines run through the run_shell tool: sandboxed, no network, the roots writable."""
        outcome = self.session.catalog.call("run_shell", {"script": command}, self.session.context())
        return outcome.text

    def _rebuild_allowlist(self) -> None:
        """The seed's Layer 1: reset and rebuild the allowlist before each model request."""
        self.session.workspace = self.tracked.workspace()

    async def confirm(self, request: ApprovalRequest) -> bool:
        """The approval prompt for tool calls the policy does not allow outright."""
        self.view.flush()
        details = request.details()
        if details:
            self.console.print(details, markup=False, highlight=False)
        answer = await self.ask(f"  call {request.summary(160)}? [y/N] ")
        return answer.strip().lower().startswith("y")

    async def run(self) -> None:
        self.console.print(f"[bold]codeward chat[/] — model {self.session.profile.name} "
                           f"({self.session.profile.base_url}); session {self.log.session_id}. :help for commands.")
        while True:
            try:
                line = await self._next_line()
            except EOFError:
                return
            except KeyboardInterrupt:
                continue
            line = line.strip()
            if not line:
                continue
            if line.startswith(":"):
                if not await self.meta(line):
                    return
                continue
            await self.send(line)

    def post(self, line: str | Callable[[], None]) -> None:
        """Queue a line as if typed at the prompt (a message, or a ``:`` command), or a change to
        make once no reply runs; the caller must be on the shell's loop."""
        self.inbox.append(line)
        self._wake.set()

    async def _next_line(self) -> str:
        """The next line: one posted from outside, else what is typed (the prompt is withdrawn
        when a posted line arrives first)."""
        while not self.inbox or callable(self.inbox[0]):
            if self.inbox:
                change = self.inbox.popleft()
                assert callable(change)
                change()
                continue
            self._wake.clear()
            prompt = asyncio.ensure_future(self.ask("› "))
            woken = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({prompt, woken}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                woken.cancel()
            if prompt.done():
                return prompt.result()
            prompt.cancel()
            with contextlib.suppress(BaseException):
                await prompt
        line = self.inbox.popleft()
        assert isinstance(line, str)
        self.console.print(f"› {line}", style="cyan", markup=False, highlight=False)
        self.console.print("  (sent from the control API)", style="dim")
        return line

    def cancel_turn(self) -> bool:
        """Stop the running reply, as Ctrl-C does; False when none is running."""
        if self.turn is None or self.turn.done():
            return False
        self.turn.cancel()
        return True

    def reset(self) -> None:
        """A fresh conversation in a new session file; tracked files and settings stay."""
        self.cancel_turn()
        self.conversation.turns.clear()
        self.pending_exec = []
        self.pending_files = list(self.tracked.paths())
        old = self.log
        self.log = SessionLog.create(old.path.parent, model=self.session.profile.model,
                                     system=self.conversation.system)
        listeners = self.conversation.listeners
        if old.record in listeners:
            listeners[listeners.index(old.record)] = self.log.record
        old.close()
        self._record_tracked()
        for listener in self.on_reset:
            listener()
        self.console.print(f"[yellow][codeward] session reset: new session {self.log.session_id}[/]")

    def replace_conversation(self, turns: list[Any]) -> None:
        """The conversation becomes ``turns`` (checked by the caller), in a new session file."""
        self.reset()
        self.conversation.extend(turns)
        self.console.print(f"[yellow][codeward] conversation replaced from the control API: {len(turns)} turns[/]")

    async def send(self, line: str) -> None:
        typed = line
        if self.pending_files:
            block = self.tracked.context_block(self.pending_files)
            line = f"{block}\n\n{line}" if block else line
            self.pending_files = []
        if self.pending_exec:
            line = "\n\n".join([*self.pending_exec, line])
            self.pending_exec = []
        task = asyncio.ensure_future(self.loop(line, typed).run(line))
        self.turn = task
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, task.cancel)
            installed = True
        except (NotImplementedError, RuntimeError):
            installed = False
        try:
            result = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():  # the shell itself is stopping (SIGTERM), not Ctrl-C
                raise
            self.view.flush()
            self.console.print("[yellow][codeward] response cancelled[/]")
            self._repair_after_cancel()
            return
        finally:
            self.turn = None
            if installed:
                loop.remove_signal_handler(signal.SIGINT)
        if self._progress is not None and result.ok:
            self.view.flush()
            self._progress.finished(result.rounds, result.tool_calls)
        self._status()
        for command in extract_commands(result.text):
            answer = await self.ask(f"  run `{command}`? [y/N] ")
            if answer.strip().lower().startswith("y"):
                output = await asyncio.to_thread(self.command_runner, command, self.session.workspace.primary)
                self.console.print(output, style="dim", markup=False, highlight=False)
                self.pending_exec.append(f"[exec: {command}]\n{output}")

    def _repair_after_cancel(self) -> None:
        """A cancelled round may leave calls unanswered: answer them so the context stays valid."""
        for call_id in sorted(self.conversation.pending_call_ids()):
            self.conversation.append(Turn("tool", "[codeward] cancelled by the user before it finished",
                                          tool_call_id=call_id))

    async def meta(self, line: str) -> bool:
        """Run a ``:`` command; False means leave the shell."""
        try:
            words = shlex.split(line[1:])
        except ValueError as exc:
            self.console.print(f"[red]cannot parse that command: {exc}[/]")
            return True
        command, args = (words[0], words[1:]) if words else ("help", [])
        if command in ("quit", "q", "exit"):
            return False
        if command == "help":
            self.console.print(HELP, markup=False, highlight=False)
        elif command == "add":
            self.add_files(args)
        elif command == "drop":
            dropped = self.tracked.drop(args)
            self.console.print(f"dropped {', '.join(dropped)}" if dropped else "[red]no tracked file matches[/]")
            self._record_tracked()
        elif command == "files":
            self._files()
        elif command == "model":
            await self._model(args)
        elif command == "history":
            self._history()
        elif command == "reset":
            self.reset()
        elif command == "mcp":
            await self._mcp(args)
        else:
            self.console.print(f"[red]unknown command :{command}[/] — :help lists the commands")
        return True

    def add_files(self, patterns: list[str]) -> None:
        """Track files: their content goes to the model with the next message."""
        if not patterns:
            self.console.print("[red]usage:[/] :add PATH|GLOB ...")
            return
        added, problems = self.tracked.add(patterns)
        for problem in problems:
            self.console.print(f"[red]{problem}[/]", highlight=False)
        if added:
            self.pending_files.extend(added)
            self.console.print(f"tracking {', '.join(added)} — sent with your next message", highlight=False)
            self._record_tracked()
            self._status()

    def _record_tracked(self) -> None:
        self.log.record_meta("tracked", self.tracked.paths())

    def _files(self) -> None:
        listing = self.tracked.listing()
        if not listing:
            self.console.print("no tracked files (:add PATH|GLOB)")
            return
        table = Table("file", "bytes", "~tokens", box=None)
        for name, size, tokens in listing:
            table.add_row(name, str(size), str(tokens))
        self.console.print(table)
        self._status()

    def history_tokens(self) -> int:
        """The conversation as the next request sends it (system prompt, turns, calls and results)."""
        total = 0
        for message in self.conversation.to_messages():
            total += estimate_tokens(str(message.get("content") or "")) + 4
            for call in message.get("tool_calls") or ():
                total += estimate_tokens(call["function"]["name"] + call["function"]["arguments"]) + 4
        return total

    def context_status(self) -> tuple[str, bool]:
        """The status line (what the next request carries: schemas, history, files not yet sent) and
        whether it is over budget."""
        history = self.history_tokens()
        files = estimate_tokens(self.tracked.context_block(self.pending_files)) if self.pending_files else 0
        plan = self.session.plan
        if plan is None:
            plan = self.session.offer(" ".join(self.tracked.paths()), history + files)[1]
        window = self.session.window
        budget = self.budget_tokens or window.tokens
        total = plan.schema_tokens + history + files
        form = {"full": "all", "meta": "meta", "trimmed": ", ".join(plan.toolsets)}[plan.form]
        line = (f"context ~{total:,} of {budget:,} tokens: tools ~{plan.schema_tokens:,} ({plan.tool_count}: {form}) · "
                f"history ~{history:,} · new tracked files ~{files:,} ({len(self.tracked.files)} tracked)")
        return line, total + self.session.profile.max_tokens > budget

    def _status(self) -> None:
        line, over = self.context_status()
        self.console.print(line, style="dim", markup=False, highlight=False)
        if over:
            self.console.print("[yellow][codeward] near or over the context budget (with room for the reply): "
                               ":drop files you no longer need (see :files), or start a new session[/]")

    async def _model(self, args: list[str]) -> None:
        if not args:
            p, w = self.session.profile, self.session.window
            self.console.print(f"model {p.model} via {p.base_url} (profile {p.name}, max_tokens {p.max_tokens}, "
                               f"context {w.tokens:,} tokens from {w.source})", markup=False, highlight=False)
            return
        try:
            profile = self.session.config.model.resolve(args[0])
        except ModelConfigError as exc:
            self.console.print(f"[red]{exc}[/]")
            return
        self.session.switch_model(profile)
        window = await self.session.learn_window()
        self.console.print(f"switched to {profile.model} via {profile.base_url} (context {window.tokens:,} tokens "
                           f"from {window.source})", markup=False, highlight=False)

    def _history(self) -> None:
        sessions = list_sessions(sessions_dir())
        if not sessions:
            self.console.print("no saved sessions yet")
            return
        for path in sessions[-10:]:
            marker = "*" if path.stem == self.log.session_id else " "
            self.console.print(f"{marker} {path.stem}", markup=False)
        self.console.print(f"current conversation: {len(self.conversation.turns)} turns")

    async def _mcp(self, args: list[str]) -> None:
        gateway = self.session.gateway
        sub = args[0] if args else "list"
        if sub == "connect" and len(args) >= 2:
            try:
                url, alias, options = connect_arguments(args[1:])
                server = server_from_url(url, alias, taken=[s.alias for s in gateway.statuses()], **options)
                upstream = await gateway.add_server(server)
            except (ValueError, OSError) as exc:
                self.console.print(f"[red]cannot connect: {exc}[/]")
                return
            status = upstream.status()
            colour = "green" if status.error is None else "red"
            self.console.print(f"[{colour}]{status.alias}: {status.state}, {status.tools} tools[/]"
                               + (f" — {status.error}" if status.error else ""))
        elif sub == "disconnect" and len(args) == 2:
            done = gateway.remove_server(args[1])
            self.console.print(f"disconnected {args[1]}" if done else f"[red]no server named {args[1]!r}[/]")
        elif sub == "list":
            table = Table("alias", "state", "tools", "latency", "target", box=None)
            for s in gateway.statuses():
                latency = f"{s.latency_ms:.1f} ms" if s.latency_ms is not None else "-"
                table.add_row(s.alias, str(s.state), str(s.tools), latency, s.target)
            self.console.print(table if gateway.statuses() else "no MCP servers connected (:mcp connect <url>)")
        elif sub == "tools":
            for info in self.session.surface.tool_infos():
                summary = (info.description.splitlines() or [""])[0][:90]
                self.console.print(f"  {info.name} — {summary}", markup=False, highlight=False)
        elif sub == "tool" and len(args) == 2:
            found = next((i for i in self.session.surface.tool_infos() if i.name == args[1]), None)
            if found is None:
                self.console.print(f"[red]no tool named {args[1]!r}[/] — :mcp tools lists them")
                return
            self.console.print(found.description, markup=False, highlight=False)
            self.console.print_json(json.dumps(found.input_schema))
        else:
            self.console.print("usage: :mcp connect <url> [alias] [--token-env VAR] [--header 'Name: value'] | "
                               "disconnect <alias> | list | tools | tool <alias__name>", style="red", markup=False)
