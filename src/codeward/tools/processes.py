"""Long-running processes in the project's sandbox: ``process_start``, ``process_read``,
``process_write``, ``process_list``, ``process_stop`` (see :mod:`codeward.engines.shell.processes`)."""

from __future__ import annotations

import time
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from codeward.config.shell import ShellSettings
from codeward.engines.shell.egress import ClientEgress
from codeward.engines.shell.envfile import load_env_file
from codeward.engines.shell.processes import MAX_READ_WAIT_S, BoxProcess, process_table_of
from codeward.engines.shell.runner import (
    MAX_SCRIPT_CHARS,
    ShellCommand,
    boxed_command,
    check_command,
    in_client_network,
)
from codeward.kernel.catalog import tool
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result

NameArg = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.-]+$",
                               description="Its name, given at process_start.")]
MAX_READ_BYTES = 200_000


class ProcessInfo(BaseModel):
    name: str
    command: str
    state: Literal["running", "waiting_for_input", "exited"] = Field(
        description="waiting_for_input: blocked reading its stdin (send it input with process_write).")
    exit_code: int | None = Field(description="Its exit status once it exited (negative: killed by that signal).")
    ended_by: str = Field("", description="Why codeward ended it (a limit), empty otherwise.")
    seconds: float = Field(description="Seconds since it started.")
    output_bytes: int = Field(description="Bytes it printed so far (stdout and stderr); read them with process_read.")

    def render(self) -> str:
        state = self.state.replace("_", " ") if self.exit_code is None else f"exited {self.exit_code}"
        ended = f" ({self.ended_by})" if self.ended_by else ""
        return (f"{self.name}: {state}{ended}, {self.seconds:.0f} s, {self.output_bytes} bytes of output — "
                f"{self.command}")


class ProcessOutput(BaseModel):
    process: ProcessInfo
    text: str = Field(description="What it printed from `since` on (stdout and stderr interleaved as they came).")
    next_offset: int = Field(description="Pass as `since` to read what comes next.")
    dropped: int = Field(0, description="Bytes before this text that the bounded buffer no longer holds.")
    notes: list[str] = Field(default_factory=list)

    def render(self) -> str:
        lines = [self.process.render()]
        if self.dropped:
            lines.append(f"[... {self.dropped} earlier bytes were dropped from the buffer ...]")
        lines += [self.text.rstrip("\n")] if self.text else ["(no new output)"]
        lines.append(f"next_offset: {self.next_offset}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


class ProcessList(BaseModel):
    processes: list[ProcessInfo]

    def render(self) -> str:
        return "\n".join(p.render() for p in self.processes) or "no processes (process_start starts one)"


def _info(process: BoxProcess) -> ProcessInfo:
    state = process.state
    process.settle()
    return ProcessInfo(name=process.name, command=process.command, state=state,  # type: ignore[arg-type]
                       exit_code=process.exit_code, ended_by=process.ended_by,
                       seconds=round(time.monotonic() - process.began, 1), output_bytes=process.output.end)


def _output(process: BoxProcess, since: int, max_bytes: int, notes: list[str] | None = None) -> ProcessOutput:
    piece, after, dropped = process.output.since(since, max_bytes)
    return ProcessOutput(process=_info(process), text=piece.decode("utf-8", "replace"), next_offset=after,
                         dropped=dropped, notes=notes or [])


@tool(toolset="shell", read_only=False, destructive=True, open_world=True, title="Start a long-running process",
      examples=[{"name": "repl", "command": "python3 -i -q"}])
def process_start(
    ctx: ToolContext,
    name: NameArg,
    command: Annotated[str, Field(min_length=1, max_length=MAX_SCRIPT_CHARS)],
    shell: Literal["bash", "sh"] = "bash",
) -> Result[ProcessOutput]:
    """Start a long-running command (a dev server, a REPL) in run_shell's sandbox."""
    settings = ctx.services.get(ShellSettings)
    if not settings.sandbox:
        return Result.fail(ErrorKind.UNAVAILABLE, "long-running processes run only in the sandbox, and "
                           "[shell] sandbox = false in codeward.toml", "Use run_shell, or turn the shell's "
                           "sandbox back on.", data=None)  # type: ignore[arg-type]
    shell_command = ShellCommand(command, shell, min(settings.process_lifetime_s, settings.max_timeout_s))
    checked = check_command(shell_command, settings)
    if not checked.ok:
        return checked.cast(None)  # type: ignore[arg-type]
    shell_command = ShellCommand(command, shell, settings.process_lifetime_s)
    table = process_table_of(ctx.services)
    egress: list[ClientEgress] = []  # its admission to the egress proxy, when the operator allows some domains

    def start() -> Result[object]:
        env_file = load_env_file(ctx.workspace)
        if not env_file.ok:
            return env_file.cast(None)
        boxed = boxed_command(ctx, shell_command, settings, env_file.data)
        if not boxed.ok or boxed.data is None:
            return boxed.cast(None)
        box, program = boxed.data
        joined = in_client_network(ctx, program, "processes", f"process {name}", make=True)
        if not joined.ok or joined.data is None:
            return joined.cast(None)
        joined_program, admitted = joined.data
        egress[:] = [admitted]
        started = box.start_writing(joined_program)
        if started.data is None:
            admitted.finish()
        return Result(data=started.data, notes=[*boxed.notes, *joined.notes, *started.notes], errors=started.errors)

    made = table.start(ctx, name, command, start)  # type: ignore[arg-type]
    if not made.ok or made.data is None:
        if egress:
            egress[0].finish()
        return made.cast(None)  # type: ignore[arg-type]
    if egress:
        made.data.egress = egress[0].grant
    return Result.success(_output(made.data, 0, 0, [*made.notes, *made.data.started.notes]))


@tool(toolset="shell", read_only=True, title="Read a process's output",
      examples=[{"name": "repl", "since": 0, "wait_s": 1}])
def process_read(
    ctx: ToolContext,
    name: NameArg,
    since: Annotated[int, Field(ge=0, description="0, or the last read's next_offset.")] = 0,
    max_bytes: Annotated[int, Field(ge=1, le=MAX_READ_BYTES)] = 16_000,
    wait_s: Annotated[float, Field(ge=0, le=MAX_READ_WAIT_S, description="Wait this long for output (or until).")] = 0,
    until: Annotated[str, Field(max_length=200, description="Text to wait for (e.g. \"Listening on\").")] = "",
) -> Result[ProcessOutput]:
    """What a process printed since an offset, and its state; waiting for input also ends a wait."""
    found = process_table_of(ctx.services).find(ctx, name)
    if not found.ok or found.data is None:
        return found.cast(None)  # type: ignore[arg-type]
    process = found.data
    deadline = time.monotonic() + wait_s
    needle = until.encode()

    def ready() -> bool:
        piece, _, _ = process.output.since(since, MAX_READ_BYTES * 10)
        if process.exit_code is not None:
            return True
        return needle in piece if needle else bool(piece)

    waiting = 0
    with process.output.changed:
        while not ready() and (left := deadline - time.monotonic()) > 0 and not ctx.cancelled.is_set():
            process.output.changed.wait(min(left, 0.1))
            waiting = waiting + 1 if process.started.waits_for_input() else 0
            if waiting >= 2:  # seen twice in a row: it waits for input, nothing more will come without it
                break
    return Result.success(_output(process, since, max_bytes, process.network_notes()))


@tool(toolset="shell", read_only=False, title="Write to a process's input",
      examples=[{"name": "repl", "text": "print(6 * 7)\n"}])
def process_write(
    ctx: ToolContext,
    name: NameArg,
    text: Annotated[str, Field(max_length=MAX_SCRIPT_CHARS, description="Sent to stdin (end a line with \\n).")],
    close_stdin: Annotated[bool, Field(description="Then close stdin.")] = False,
) -> Result[ProcessOutput]:
    """Send text to a running process's stdin."""
    found = process_table_of(ctx.services).find(ctx, name)
    if not found.ok or found.data is None:
        return found.cast(None)  # type: ignore[arg-type]
    process = found.data
    stdin = process.started.proc.stdin
    if process.exit_code is not None or stdin is None or stdin.closed:
        return Result.fail(ErrorKind.CONFLICT, f"process {name!r} no longer reads input "
                           f"({'it exited' if process.exit_code is not None else 'its input was closed'})",
                           "process_read shows its last output; process_stop ends it.", data=None)  # type: ignore[arg-type]
    try:
        stdin.write(text.encode())
        stdin.flush()
        if close_stdin:
            stdin.close()
    except (BrokenPipeError, ValueError, OSError) as exc:
        return Result.fail(ErrorKind.CONFLICT, f"process {name!r} did not take the input: {exc}",
                           "It may have exited; process_read shows its state.", data=None)  # type: ignore[arg-type]
    return Result.success(_output(process, process.output.end, 0))


@tool(toolset="shell", read_only=False, title="Apply a running process's file changes",
      examples=[{"name": "repl"}])
def process_apply(ctx: ToolContext, name: NameArg) -> Result[ProcessOutput]:
    """Apply a running process's file changes so far (checked as run_shell's)."""
    found = process_table_of(ctx.services).find(ctx, name)
    if not found.ok or found.data is None:
        return found.cast(None)  # type: ignore[arg-type]
    process = found.data
    notes = process.started.apply(ctx)
    return Result.success(_output(process, process.output.end, 0, notes or ["nothing new to apply"]))


@tool(toolset="shell", read_only=True, title="List long-running processes", examples=[{}])
def process_list(ctx: ToolContext) -> Result[ProcessList]:
    """The long-running processes this client started: name, command, state, age, output size."""
    return Result.success(ProcessList(processes=[_info(p) for p in process_table_of(ctx.services).listed(ctx)]))


@tool(toolset="shell", read_only=False, destructive=True, title="Stop a long-running process",
      examples=[{"name": "repl"}])
def process_stop(ctx: ToolContext, name: NameArg) -> Result[ProcessOutput]:
    """Stop a process tree, apply its file changes (checked as run_shell's), return its last output."""
    table = process_table_of(ctx.services)
    found = table.find(ctx, name)
    if not found.ok or found.data is None:
        return found.cast(None)  # type: ignore[arg-type]
    process = found.data
    notes = table.stop(ctx, process)
    return Result.success(_output(process, max(0, process.output.end - 4000), 4000, [*notes, *process.network_notes()]))
