"""``codeward chat``: the interactive shell over an :class:`AgentSession`.

prompt_toolkit reads lines (with persistent input history); rich renders the answer as it
streams and a dim frame per tool call. Ctrl-C cancels the current response and keeps the
shell; Ctrl-D or ``:quit`` leaves. Lines starting with ``:`` are meta commands; ``CMD:`` lines
in a reply are offered as shell commands, run only after a yes, and their output goes to the
model with the next message.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from codeward.agent.conversation import Conversation
from codeward.agent.history import SessionLog, list_sessions, sessions_dir
from codeward.agent.loop import ToolLoop
from codeward.agent.render import RichView
from codeward.agent.session import AgentSession
from codeward.agent.tracked import TrackedFiles, estimate_tokens
from codeward.config.agent import DEFAULT_BUDGET_TOKENS
from codeward.gateway.config import server_from_url
from codeward.gateway.policy import ApprovalRequest
from codeward.llm.profile import ModelConfigError

HELP = """Commands:
  :help                         this help
  :model [NAME]                 show the model, or switch to a profile (or model id)
  :history                      saved sessions (resume one with `codeward chat --resume ID`)
  :add PATH|GLOB ...            track files: content to the model once, then diffs when they change
  :drop PATH|GLOB ...           stop tracking them
  :files                        tracked files with sizes and token estimates
  :mcp connect <url> [alias]    connect an MCP server; its tools become alias__tool
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
    budget_tokens: int = DEFAULT_BUDGET_TOKENS

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

    def loop(self) -> ToolLoop:
        return ToolLoop(self.session.client, self.session.surface, self.conversation, self.view,
                        self.session.context, self.session.settings, before_request=self._rebuild_allowlist,
                        after_tools=self.tracked.refresh)

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
        answer = await self.ask(f"  call {request.summary(160)}? [y/N] ")
        return answer.strip().lower().startswith("y")

    async def run(self) -> None:
        self.console.print(f"[bold]codeward chat[/] — model {self.session.profile.name} "
                           f"({self.session.profile.base_url}); session {self.log.session_id}. :help for commands.")
        while True:
            try:
                line = await self.ask("› ")
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

    async def send(self, line: str) -> None:
        if self.pending_files:
            block = self.tracked.context_block(self.pending_files)
            line = f"{block}\n\n{line}" if block else line
            self.pending_files = []
        if self.pending_exec:
            line = "\n\n".join([*self.pending_exec, line])
            self.pending_exec = []
        task = asyncio.ensure_future(self.loop().run(line))
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, task.cancel)
            installed = True
        except (NotImplementedError, RuntimeError):
            installed = False
        try:
            result = await task
        except asyncio.CancelledError:
            self.view.flush()
            self.console.print("[yellow][codeward] response cancelled[/]")
            self._repair_after_cancel()
            return
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGINT)
        self._status()
        for command in extract_commands(result.text):
            answer = await self.ask(f"  run `{command}`? [y/N] ")
            if answer.strip().lower().startswith("y"):
                output = await asyncio.to_thread(self.command_runner, command, self.session.workspace.primary)
                self.console.print(output, style="dim", markup=False, highlight=False)
                self.pending_exec.append(f"[exec: {command}]\n{output}")

    def _repair_after_cancel(self) -> None:
        """A cancelled round may leave calls unanswered: answer them so the context stays valid."""
        from codeward.agent.conversation import Turn

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
            self._model(args)
        elif command == "history":
            self._history()
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
        return sum(estimate_tokens(str(m.get("content") or "")) for m in self.conversation.to_messages())

    def _status(self) -> None:
        files, history = self.tracked.tokens(), self.history_tokens()
        self.console.print(f"[dim]context: {len(self.tracked.files)} tracked files ~{files:,} tokens · "
                           f"history ~{history:,} tokens[/]")
        if files + history > self.budget_tokens:
            self.console.print(f"[yellow][codeward] over the context budget ({self.budget_tokens:,} tokens): "
                               ":drop files you no longer need (see :files)[/]")

    def _model(self, args: list[str]) -> None:
        if not args:
            p = self.session.profile
            self.console.print(f"model {p.model} via {p.base_url} (profile {p.name}, max_tokens {p.max_tokens})")
            return
        try:
            profile = self.session.config.model.resolve(args[0])
        except ModelConfigError as exc:
            self.console.print(f"[red]{exc}[/]")
            return
        self.session.switch_model(profile)
        self.console.print(f"switched to {profile.model} via {profile.base_url}")

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
        if sub == "connect" and len(args) in (2, 3):
            try:
                server = server_from_url(args[1], args[2] if len(args) == 3 else None,
                                         taken=[s.alias for s in gateway.statuses()])
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
            self.console.print("[red]usage:[/] :mcp connect <url> [alias] | disconnect <alias> | list | tools | "
                               "tool <alias__name>")
