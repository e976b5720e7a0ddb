"""Whether ``run_shell`` costs the same in a small and a large project: ``echo hi`` through the
official Python client over stdio to ``codeward serve``, in a one-file git repository and in an
N-file one (default 18,000 files in 600 folders, committed), against a bare
``bwrap --unshare-all ... echo hi`` measured in the same run.

Rows (p50 of ``--runs`` calls each, taken in turns — the order rotating every round — so a busy
machine slows all of them alike, and the box a server prepares after its call does not always
overlap the same next row):

- ``bare bwrap``: ``bwrap --unshare-all --die-with-parent --ro-bind /usr /usr`` (with ``/bin``,
  ``/lib``... links) ``echo hi`` as a plain subprocess (the baseline);
- ``run_shell 1 file`` / ``run_shell N files``: ``run_shell(script="echo hi")`` — the whole round
  trip a client sees (JSON-RPC, the server, the secret list, the git checks, the box prepared
  ahead after the previous run, the write-back of an empty upper layer);
- ``run_shell 1 file, no box ahead``: the same with ``[shell] warm_box = false`` (each run builds
  its box: the fork, namespaces, tmpfs and overlay mounts, bwrap's set-up) — what the box
  prepared ahead saves.

``--against PYTHON`` adds the two ``run_shell`` rows served by the codeward another interpreter imports
(another checkout's virtual environment, ``(against)``), so a change is measured before and after in
one run, under the same load.

Between timed calls the bench pauses ``--gap`` seconds (untimed), as a model's think time would,
so work a server does in the background after a call is not counted in it (and the machine is not
kept busy by the bench itself). Target (issue 35): each ``run_shell`` row ≤ 2× bare.

    .venv/bin/python bench/shell_flat_bench.py [--runs 20] [--files 18000] [--gap 0.2] [--against PYTHON]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

TARGET = 2.0
BWRAP = shutil.which("bwrap") or "bwrap"
SYSTEM_LINKS = ("/bin", "/lib", "/lib64", "/sbin")


def bare_argv() -> list[str]:
    argv = [BWRAP, "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr"]
    for link in SYSTEM_LINKS:
        if os.path.islink(link):
            argv += ["--symlink", os.readlink(link), link]
    return [*argv, "echo", "hi"]


def bare(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, check=True)
    assert done.stdout == b"hi\n", done.stdout


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
                    "-c", "gc.auto=0", *args], check=True, capture_output=True)  # no gc left running behind


def make_project(root: Path, files: int) -> None:
    """A git repository of ``files`` small Python files, 30 per folder, committed."""
    root.mkdir()
    for index in range(files):
        folder = root / f"pkg_{index // 900}" / f"mod_{index // 30}"
        if index % 30 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f_{index}.py").write_text(f"VALUE = {index}\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "bench")


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def open_client(stack: AsyncExitStack, root: Path, python: str = sys.executable) -> Client:
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=python, args=["-m", "codeward", "serve", str(root)],
                                   cwd=str(root), env={**os.environ, "CODEWARD_USER_AI_DIR": str(root.parent / "ai")})
    quiet = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115 - closed by the stack
    client: Client = await stack.enter_async_context(Client(stdio_client(params, errlog=quiet)))
    return client


def shell_call(client: Client) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        result = await client.call_tool("run_shell", {"script": "echo hi"})
        text = _text(result)
        assert not result.is_error and "STDOUT:\nhi\n" in text, text
    return call


async def measure(runs: int, files: int, gap: float, against: str | None = None) -> None:
    with tempfile.TemporaryDirectory(prefix="codeward-flat-bench-", ignore_cleanup_errors=True) as folder:
        small, large, cold = Path(folder) / "small", Path(folder) / "large", Path(folder) / "cold"
        make_project(small, 1)
        make_project(cold, 1)
        (cold / "codeward.toml").write_text("[shell]\nwarm_box = false\n")
        started = time.perf_counter()
        make_project(large, files)
        print(f"made a {files:,}-file repository in {time.perf_counter() - started:.1f} s")
        argv = bare_argv()
        async with AsyncExitStack() as stack:
            clients = {"run_shell 1 file": await open_client(stack, small),
                       f"run_shell {files:,} files": await open_client(stack, large),
                       "run_shell 1 file, no box ahead": await open_client(stack, cold)}
            if against is not None:  # the same projects, served by the other checkout
                clients["run_shell 1 file (against)"] = await open_client(stack, small, against)
                clients[f"run_shell {files:,} files (against)"] = await open_client(stack, large, against)
            calls = {name: shell_call(client) for name, client in clients.items()}
            for call in calls.values():  # warm: first-call imports, the first secret scan
                await call()
                await call()
            async def bare_call() -> None:
                bare(argv)

            rows: list[tuple[str, Callable[[], Awaitable[None]]]] = [("bare bwrap", bare_call), *calls.items()]
            times: dict[str, list[float]] = {name: [] for name, _call in rows}
            for round_index in range(runs):
                turn = round_index % len(rows)  # each row in turn follows each other (a server's box-making
                for name, call in rows[turn:] + rows[:turn]:  # after a call must not always land on the same row)
                    await anyio.sleep(gap)
                    started = time.perf_counter()
                    await call()
                    times[name].append((time.perf_counter() - started) * 1000)
    baseline = statistics.median(times["bare bwrap"])
    print(f"{'row':<42} {'p50 ms':>8} {'ratio':>7}")
    for name, values in times.items():
        p50 = statistics.median(values)
        verdict = "" if name == "bare bwrap" or "no box" in name or "against" in name else (
            "  ok" if p50 <= TARGET * baseline else f"  > {TARGET:g}x")
        print(f"{name:<42} {p50:8.1f} {p50 / baseline:6.2f}x{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--files", type=int, default=18_000)
    parser.add_argument("--gap", type=float, default=0.2)
    parser.add_argument("--against", metavar="PYTHON", help="also serve both projects with this interpreter's codeward")
    args = parser.parse_args()
    anyio.run(measure, args.runs, args.files, args.gap, args.against)


if __name__ == "__main__":
    main()
