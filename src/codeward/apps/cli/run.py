"""``codeward run FILE|-``: run a source file (or stdin) in the sandbox like an interpreter would.

The program's stdout and stderr are passed through; the exit status is the program's
(128+N when killed by signal N), 124 on timeout (as ``timeout(1)``), 2 when it could not
run at all. What went wrong is said on stderr, prefixed ``codeward:``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from codeward.apps.cli.common import configs_of
from codeward.config import CodingSettings, load_config
from codeward.config.coding import LANGUAGE_NAMES
from codeward.serving.stack import build_stack

if TYPE_CHECKING:
    from codeward.config import Config
    from codeward.kernel.context import Services

EXTENSIONS = {
    ".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".sh": "bash",
    ".bash": "bash", ".c": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".go": "go", ".rs": "rust",
    ".java": "java",
}
EXIT_TIMEOUT = 124
EXIT_SETUP = 2


def register(sub: Any) -> None:
    run = sub.add_parser("run", help="run a program in the sandbox (python, js, bash, c, cpp, go, rust, java)",
                         description="Run a file (or - for stdin) in the sandbox; the exit code is the program's "
                         "(124 on timeout, 128+N on signal N, 2 when it could not run).")
    run.add_argument("file", help="source file, or - to read the program from stdin")
    run.add_argument("--language", help="language (default: from the file extension)")
    run.add_argument("--timeout", type=float, default=30.0, help="seconds before the run is killed (default 30)")
    run.add_argument("--memory-mb", type=int, help="memory limit (default: the language's)")
    run.add_argument("--network", action="store_true", help="allow network access (off by default)")
    run.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    return run_file_cli(args.file, args.language, timeout_s=args.timeout, memory_mb=args.memory_mb,
                        network=args.network, config=configs_of(args)[0])


def run_file_cli(
    path_or_dash: str, language: str | None, *, timeout_s: float = 30.0, memory_mb: int | None = None,
    network: bool = False, stdin: TextIO | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None,
    config: Config | None = None,
) -> int:
    """Run the file (``-``: source from stdin) and return the exit status to exit with."""
    from codeward.engines.contained.project_sandbox import backends_of
    from codeward.engines.execution.debug import detect_language
    from codeward.engines.execution.execute import Limits, execute
    from codeward.engines.execution.runtime import CodingRuntime
    from codeward.engines.sandbox import Status

    source_in = stdin or sys.stdin
    out, err = stdout or sys.stdout, stderr or sys.stderr
    if path_or_dash == "-":
        code, program_stdin = source_in.read(), ""
    else:
        try:
            with open(path_or_dash, encoding="utf-8") as handle:
                code = handle.read()
        except OSError as exc:
            print(f"codeward: cannot read {path_or_dash}: {exc.strerror or exc}", file=err)
            return EXIT_SETUP
        except UnicodeDecodeError:
            print(f"codeward: {path_or_dash} is not UTF-8 text", file=err)
            return EXIT_SETUP
        program_stdin = "" if source_in.isatty() else source_in.read()
    chosen = language or EXTENSIONS.get(os.path.splitext(path_or_dash)[1].lower()) or (
        detect_language(code) if path_or_dash == "-" else None)
    if chosen is None or chosen not in LANGUAGE_NAMES:
        print(f"codeward: cannot tell the language of {path_or_dash}; pass --language with one of "
              f"{', '.join(LANGUAGE_NAMES)}", file=err)
        return EXIT_SETUP
    services = _services(config)
    runtime = CodingRuntime(services.get(CodingSettings).model_copy(update={"pool_size": 0}), backends_of(services))
    try:
        result = execute(runtime, chosen, code, program_stdin, Limits(timeout_s, memory_mb, network))
    finally:
        runtime.close()
    out.write(result.stdout)
    out.flush()
    err.write(result.stderr)
    if result.status is Status.SETUP_ERROR:
        print(f"codeward: {result.error_message}", file=err)
        return EXIT_SETUP
    if not result.isolated:
        print(f"codeward: note: ran in the {result.backend} backend, NOT isolated", file=err)
    if result.status is Status.TIMEOUT:
        print(f"codeward: {result.error_message}", file=err)
        return EXIT_TIMEOUT
    if result.status is Status.ERROR and result.error_message and (result.limit_hit or (result.compile_time
                                                                   and result.execution_time == 0)):
        print(f"codeward: {result.error_message}", file=err)
    code_out = result.exit_code if result.exit_code is not None else 1
    return 128 - code_out if code_out < 0 else min(code_out, 255)


def _services(config: Config | None) -> Services:
    """The services the stack of this configuration would use (``[sandbox]``, ``[coding]``: backend, model)."""
    return build_stack(config or load_config()).services
