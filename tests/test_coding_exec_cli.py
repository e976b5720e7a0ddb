"""run_file_cli (``codeward run FILE|-``): output passed through, exit status like an interpreter's."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from codeward.apps.cli.run import EXIT_SETUP, EXIT_TIMEOUT, run_file_cli
from tests.conftest import snapshot

pytestmark = pytest.mark.xdist_group("coding-cli")


class Stdin(io.StringIO):
    def __init__(self, text: str, tty: bool = False) -> None:
        super().__init__(text)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def cli(path: str, language: str | None = None, stdin: str = "", **options: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_file_cli(path, language, stdin=Stdin(stdin), stdout=out, stderr=err, **options)  # type: ignore[arg-type]
    return code, out.getvalue(), err.getvalue()


def test_runs_a_file_with_stdin_and_returns_its_exit_status(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text("import sys\nprint(sys.stdin.read().upper(), end='')\nsys.exit(7)\n")
    before = snapshot(tmp_path)
    status, out, _err = cli(str(script), stdin="piped\n")
    assert (status, out) == (7, "PIPED\n")
    assert snapshot(tmp_path) == before


def test_language_comes_from_the_extension_or_the_option(tmp_path: Path) -> None:
    script = tmp_path / "greet.sh"
    script.write_text("echo from-bash; echo to-stderr >&2\n")
    assert cli(str(script))[:3] == (0, "from-bash\n", "to-stderr\n")
    untyped = tmp_path / "script"
    untyped.write_text("print('from python')\n")
    assert cli(str(untyped), "python")[:2] == (0, "from python\n")
    status, _out, err = cli(str(untyped))
    assert status == EXIT_SETUP and "pass --language" in err


def test_dash_reads_the_source_from_stdin() -> None:
    status, out, _err = cli("-", "python", stdin="print(6 * 7)\n")
    assert (status, out) == (0, "42\n")


def test_compile_errors_and_signals_give_interpreter_like_statuses(tmp_path: Path) -> None:
    broken = tmp_path / "broken.c"
    broken.write_text("int main(void) { return nope; }\n")
    status, _out, err = cli(str(broken))
    assert status == 1 and "compilation failed" in err and "nope" in err
    crash = tmp_path / "crash.c"
    crash.write_text("int main(void) { volatile int *p = 0; return *p; }\n")
    assert cli(str(crash))[0] == 128 + 11


def test_timeout_exits_124(tmp_path: Path) -> None:
    spin = tmp_path / "spin.py"
    spin.write_text("while True: pass\n")
    status, _out, err = cli(str(spin), timeout_s=1)
    assert status == EXIT_TIMEOUT and "timed out" in err


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    status, _out, err = cli(str(tmp_path / "absent.py"))
    assert status == EXIT_SETUP and "cannot read" in err and "absent.py" in err
