"""``python -m codeward`` and the ``codeward`` command: the first code the process runs.

SIGTERM (``kill``, ``systemctl stop``, ``docker stop``, ``timeout``) and SIGINT (Ctrl-C) are turned
into a clean exit before anything else is imported, so a stop that lands while the command line's
modules still import exits 143 or 130 like one that lands later, without a traceback. The rest of
the exit-code contract (``docs/cli.md``) is :func:`codeward.apps.cli.main`'s.
"""

import gc
import os
import signal
import sys
import threading
import time

CHILDREN_GRACE_S = 1.5
"""How long a stopped command has to end its own child processes (a gateway closing its upstreams)
before those still running are ended for it."""


def main() -> int:
    """The ``codeward`` console script."""
    stop_on_signals()
    gc.disable()  # while the command line's modules import: cli.main turns it on (a server: once it serves)
    try:
        from codeward.apps.cli import main as command_line

        return command_line()
    except KeyboardInterrupt:  # while the command line imported
        return 128 + signal.SIGINT
    except ModuleNotFoundError as missing:
        if not _built_for_review_only():
            raise
        print(f"codeward: this installation is the pre-commit hook's, built for `codeward review` only ({missing.name} "
              "is not installed); install codeward itself for this command (pipx install <codeward's wheel or "
              "git URL>)", file=sys.stderr)
        return 2
    finally:
        _end_children(grace_s=0.0)  # whatever the command left running (none, unless it was stopped)


def _built_for_review_only() -> bool:
    """codeward was built with the ``review`` profile (its dependencies are the review extra's: no MCP SDK)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        needed = requires("codeward") or []
    except PackageNotFoundError:
        return False
    return not any(line.split(">")[0].split("=")[0].strip() == "mcp" for line in needed if "extra ==" not in line)


def stop_on_signals() -> None:
    """SIGTERM raises ``SystemExit(143)`` where the main thread is, so every ``finally`` runs (a generated
    token file is removed, a child process group is killed) on the way out; SIGINT raises
    ``KeyboardInterrupt`` (130) the same way. Servers that take the signals over while they serve
    (uvicorn) raise them again once they have shut down.

    SIGINT gets a handler of its own rather than Python's default one: with the default one installed,
    ``asyncio.run`` turns Ctrl-C into a cancellation of its main task, which reached a starting HTTP
    server's lifespan as an error with a traceback."""
    signal.signal(signal.SIGTERM, _terminated)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started in the background by a shell: Ctrl-C is not ours
        return
    signal.signal(signal.SIGINT, _interrupted)


def _terminated(signum: int, frame: object) -> None:
    _stop(SystemExit(128 + signum))


def _interrupted(signum: int, frame: object) -> None:
    _stop(KeyboardInterrupt())


def _stop(stop: BaseException) -> None:
    """Raise ``stop`` here, or, while an event loop runs in this thread, from a callback of that loop:
    raised inside a task it would end that task with it and the loop's shutdown would report the task
    with a traceback; raised from a callback it leaves the loop, which then cancels every task."""
    _end_children_later()
    asyncio = sys.modules.get("asyncio")  # not imported yet: no loop runs (and none is imported from here)
    loop = asyncio._get_running_loop() if asyncio is not None else None
    if loop is None or loop.is_closed():
        raise stop
    loop.call_soon_threadsafe(_raise, stop)


def _raise(stop: BaseException) -> None:
    raise stop


def _end_children_later() -> None:
    """A tool's program (a sandboxed shell, a test run) is waited on in a worker thread, which the
    interpreter joins before it exits: ended here, in its own process group, it lets the stop finish
    instead of waiting out the program's timeout, and leaves no orphan behind."""
    threading.Thread(target=_end_children, args=(CHILDREN_GRACE_S,), name="codeward-stop", daemon=True).start()


def _end_children(grace_s: float) -> None:
    """After ``grace_s``, SIGTERM each child's process group (the child alone if it shares ours), then
    SIGKILL what is left two seconds later."""
    time.sleep(grace_s)
    import psutil

    for sig, wait_s in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 0.0)):
        children = psutil.Process().children()
        if not children:
            return
        own_group = os.getpgrp()
        for child in children:
            try:
                group = os.getpgid(child.pid)
                if group != own_group:
                    os.killpg(group, sig)
                else:
                    child.send_signal(sig)
            except (OSError, psutil.Error):
                pass
        psutil.wait_procs(children, timeout=wait_s)


if __name__ == "__main__":
    sys.exit(main())
