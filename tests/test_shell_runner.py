"""run_shell through the catalog: the seed's output format, mcp_env.toml, bad input, bounded
output, the log, the QA callback against a real local OpenAI-protocol server, cancellation."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from codeward.config import ConfigError, ModelSettings, load_config
from codeward.engines.shell import ShellSettings
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace
from tests.conftest import snapshot
from tests.fake_openai import FakeOpenAI, text
from tests.sandbox_support import needs_bwrap

MODES = [pytest.param(True, id="sandboxed", marks=needs_bwrap), pytest.param(False, id="unsandboxed")]
LOG = Path(".codeward/logs/shell.jsonl")


class Recorder:
    """A reporter that keeps what a tool logs and reports."""

    def __init__(self) -> None:
        self.logs: list[tuple[str, str]] = []
        self.progress_seen: list[float] = []

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        self.progress_seen.append(done)

    def log(self, level: str, message: str) -> None:
        self.logs.append((level, message))


def shell_call(catalog: Catalog, root: Path, settings: ShellSettings | None = None,
               reporter: Recorder | None = None) -> Any:
    ctx = ToolContext(Workspace.create([root]), services=Services(settings), reporter=reporter or Recorder())

    def run(script: str, **arguments: Any) -> ToolOutcome:
        return catalog.call("run_shell", {"script": script, **arguments}, ctx)

    run.ctx = ctx  # type: ignore[attr-defined]
    return run


@pytest.mark.parametrize("sandboxed", MODES)
def test_output_format_is_exactly_the_seeds(catalog: Catalog, root: Path, sandboxed: bool) -> None:
    run = shell_call(catalog, root, ShellSettings(sandbox=sandboxed))
    outcome = run("printf 'out line\\n'; printf 'err line\\n' >&2; exit 3")
    assert not outcome.is_error
    body = "STDOUT:\nout line\n\nSTDERR:\nerr line\n\nEXIT CODE: 3"
    if sandboxed:
        assert outcome.text == body
    else:
        first, rest = outcome.text.split("\n", 1)
        assert first.startswith("[unsandboxed: ") and "full access" in first
        assert rest == body
    assert run("pwd").text.endswith(f"STDOUT:\n{root}\n\nSTDERR:\n\nEXIT CODE: 0")


def test_sh_runs_scripts_too(catalog: Catalog, root: Path) -> None:
    run = shell_call(catalog, root, ShellSettings(sandbox=False))
    outcome = run('[ -z "$BASH_VERSION" ] && echo plain-sh', shell="sh")
    assert "STDOUT:\nplain-sh\n" in outcome.text and outcome.text.endswith("EXIT CODE: 0")


ENV_FILE = """
[path]
prepend = ["tools/bin"]

[env]
GREETING = "hi"
WHERE = "${HOME}/subdir"
BOTH = "${GREETING}-${WHERE}"
HOST_SECRET = "${CW_SHELL_TEST_SECRET}"
COUNT = 3
"""
ENV_SCRIPT = 'hello-tool; echo "$GREETING|$WHERE|$BOTH|$HOST_SECRET|$COUNT"; echo "${PATH%%:*}"'


def _project_with_env_file(root: Path) -> None:
    (root / "mcp_env.toml").write_text(ENV_FILE)
    tool = root / "tools" / "bin" / "hello-tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho hello from the tools dir\n")
    tool.chmod(0o755)


@needs_bwrap
def test_env_file_in_the_sandbox_expands_against_the_sandbox_environment(
        catalog: Catalog, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CW_SHELL_TEST_SECRET", "host-secret-value")
    _project_with_env_file(root)
    outcome = shell_call(catalog, root)("" + ENV_SCRIPT)
    lines = outcome.text.split("\n")
    assert lines[1] == "hello from the tools dir"
    assert lines[2] == "hi|/tmp/subdir|hi-/tmp/subdir||3"  # a host variable does not leak in
    assert lines[3] == f"{root}/tools/bin"
    passed = shell_call(catalog, root, ShellSettings(pass_env=("CW_SHELL_TEST_SECRET",)))(ENV_SCRIPT)
    assert passed.text.split("\n")[2] == "hi|/tmp/subdir|hi-/tmp/subdir|host-secret-value|3"


def test_env_file_unsandboxed_expands_against_the_host_environment(
        catalog: Catalog, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CW_SHELL_TEST_SECRET", "host-value")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _project_with_env_file(root)
    outcome = shell_call(catalog, root, ShellSettings(sandbox=False))(ENV_SCRIPT)
    lines = outcome.text.split("\n")
    assert lines[2] == "hello from the tools dir"
    home = tmp_path / "home"
    assert lines[3] == f"hi|{home}/subdir|hi-{home}/subdir|host-value|3"
    assert lines[4] == f"{root}/tools/bin"


@pytest.mark.parametrize("content, complaint", [
    ("[env\nX=1", "not valid TOML"),
    ("[path]\nprepend = 'tools/bin'\n", "prepend must be a list"),
    ("[env]\n'1BAD' = 'x'\n", "not a valid variable name"),
    ("[env]\nX = ['a']\n", "X must be a string"),
    ("[other]\nX = 'a'\n", "unknown tables"),
])
def test_bad_env_file_is_a_clear_error_and_nothing_runs(
        catalog: Catalog, root: Path, content: str, complaint: str) -> None:
    (root / "mcp_env.toml").write_text(content)
    before = snapshot(root)
    outcome = shell_call(catalog, root, ShellSettings(sandbox=False))("echo ran > ran.txt")
    assert outcome.is_error and complaint in outcome.text and "mcp_env.toml" in outcome.text
    assert snapshot(root) == before


@pytest.mark.parametrize("arguments, complaint", [
    ({"script": ""}, "script"),
    ({"script": "   \n\t"}, "the script is empty"),
    ({"script": "echo a\0b"}, "NUL"),
    ({"script": "echo hi", "shell": "zsh"}, "shell"),
    ({"script": "echo hi", "timeout_s": 0}, "timeout_s"),
    ({"script": "echo hi", "timeout_s": -5}, "timeout_s"),
    ({"script": "echo hi", "timeout_s": 601}, "at most 600"),
    ({"script": "echo hi", "timeout_s": 100000}, "timeout_s"),
    ({"script": "echo hi", "timeout_s": "soon"}, "timeout_s"),
])
def test_bad_input_is_a_clear_error_and_changes_nothing(
        catalog: Catalog, root: Path, arguments: dict[str, Any], complaint: str) -> None:
    before = snapshot(root)
    ctx = ToolContext(Workspace.create([root]), services=Services(ShellSettings(sandbox=False)))
    outcome = catalog.call("run_shell", arguments, ctx)
    assert outcome.is_error and complaint in outcome.text
    assert snapshot(root) == before and not (root / ".codeward").exists()


def test_pwsh_runs_or_says_it_is_not_installed(catalog: Catalog, root: Path) -> None:
    import shutil

    before = snapshot(root)
    outcome = shell_call(catalog, root, ShellSettings(sandbox=False))("Write-Output 'from pwsh'", shell="pwsh")
    if shutil.which("pwsh") or shutil.which("powershell"):
        assert "STDOUT:\nfrom pwsh" in outcome.text and outcome.text.endswith("EXIT CODE: 0")
    else:
        assert outcome.is_error and "PowerShell (pwsh) is not installed" in outcome.text
        assert 'shell="bash"' in outcome.text
        assert snapshot(root) == before


def test_large_output_is_cut_with_a_marker_keeping_start_and_end(catalog: Catalog, root: Path) -> None:
    run = shell_call(catalog, root, ShellSettings(sandbox=False, output_chars=2000, max_output_bytes=50_000))
    outcome = run("echo FIRST; head -c 200000 /dev/zero | tr '\\0' 'x'; echo; echo LAST; echo tail-err >&2")
    stdout = outcome.text.split("\nSTDERR:\n")[0]
    assert stdout.split("\n")[2] == "FIRST"
    assert "characters cut ...]" in stdout
    assert "output after the first 50000 bytes was not kept" in stdout
    assert "LAST" not in stdout  # beyond what was collected
    assert outcome.text.endswith("STDERR:\ntail-err\n\nEXIT CODE: 0\nnote: output was cut at 50000 bytes per stream")
    assert len(outcome.text) < 3000


def test_every_run_is_logged_as_a_json_line_and_to_the_client(catalog: Catalog, root: Path) -> None:
    recorder = Recorder()
    run = shell_call(catalog, root, ShellSettings(sandbox=False), recorder)
    run("echo one")
    run("exit 4", shell="sh", timeout_s=5)
    entries = [json.loads(line) for line in (root / LOG).read_text().splitlines()]
    assert [(e["script"], e["shell"], e["exit_code"], e["status"]) for e in entries] == [
        ("echo one", "bash", 0, "success"), ("exit 4", "sh", 4, "error")]
    assert all(e["cwd"] == str(root) and e["sandbox"] == "unsandboxed (host)" for e in entries)
    assert entries[1]["timeout_s"] == 5 and all(isinstance(e["duration_s"], float) for e in entries)
    assert [m for level, m in recorder.logs if "run_shell" in m and level == "info"][1].startswith(
        "run_shell [unsandboxed (host)] sh exit=4")


@pytest.mark.parametrize("sandboxed", MODES)
def test_a_cancelled_call_kills_the_script(catalog: Catalog, root: Path, sandboxed: bool) -> None:
    cancel = threading.Event()

    class CancelOnProgress(Recorder):
        """Cancels at the first "running for 1 s" report: the script has surely started by then,
        however slowly a loaded machine starts the sandbox."""

        def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
            super().progress(done, total, message)
            cancel.set()

    run = shell_call(catalog, root, ShellSettings(sandbox=sandboxed), reporter=CancelOnProgress())
    ctx: ToolContext = run.ctx  # type: ignore[attr-defined]
    timer = threading.Thread(target=lambda: cancel.wait(60) and ctx.cancelled.set())
    timer.start()
    outcome = run("echo started; sleep 30; echo never", timeout_s=60)
    timer.join()
    assert outcome.is_error and "the run was cancelled" in outcome.text
    assert "STDOUT:\nstarted\n" in outcome.text and "never" not in outcome.text


def _qa_settings(fake: FakeOpenAI | None, sandboxed: bool = False) -> ShellSettings:
    models = ModelSettings.model_validate({"default": "qa", "profiles": {"qa": {"base_url": fake.base_url,
                                                                             "model": "fake"}}}) \
        if fake is not None else ModelSettings()
    return ShellSettings(sandbox=sandboxed, qa_on_failure=True, models=models)


def test_qa_callback_asks_the_model_to_explain_a_failure(catalog: Catalog, root: Path) -> None:
    explanation = "The command `frobnicate` is not installed; install it or fix the name."
    with FakeOpenAI([text(explanation)]) as fake:
        run = shell_call(catalog, root, _qa_settings(fake))
        failed = run("echo building; frobnicate --all")
        assert not failed.is_error
        assert failed.text.endswith(f"EXIT CODE: 127\nQA ANALYSIS:\n{explanation}")
        asked = fake.messages(0)[-1]["content"]
        assert "frobnicate --all" in asked and "command not found" in asked and "Exit code: 127" in asked
        succeeded = run("echo fine")
        assert succeeded.text.endswith("EXIT CODE: 0") and "QA ANALYSIS" not in succeeded.text
        assert len(fake.requests) == 1


def test_qa_without_a_model_says_so_in_one_line(catalog: Catalog, root: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    outcome = shell_call(catalog, root, _qa_settings(None))("exit 2")
    assert not outcome.is_error
    qa = outcome.text.split("QA ANALYSIS:\n", 1)[1]
    assert qa.startswith("(unavailable: no model configured") and "\n" not in qa.strip()


def test_qa_with_an_unreachable_model_says_so(catalog: Catalog, root: Path) -> None:
    with FakeOpenAI([]) as fake:  # answers HTTP 500 to everything
        outcome = shell_call(catalog, root, _qa_settings(fake))("exit 5")
    assert outcome.text.split("QA ANALYSIS:\n", 1)[1].startswith("(unavailable: HTTP 500")


def test_shell_settings_come_from_the_config_file(tmp_path: Path) -> None:
    config_file = tmp_path / "codeward.toml"
    config_file.write_text('[shell]\nsandbox = false\nmax_timeout_s = 120\nro_paths = ["tools"]\n'
                           'qa_on_failure = true\n[model]\ndefault = "x"\n')
    settings = load_config(str(config_file)).shell
    assert settings.sandbox is False and settings.max_timeout_s == 120.0 and settings.qa_on_failure
    assert settings.ro_paths == ((tmp_path / "tools").resolve(),)
    assert settings.models.default == "x"
    config_file.write_text("[shell]\nsandbox = 'no'\n")
    with pytest.raises(ConfigError, match=r"\[shell\] sandbox must be a boolean \(true/false\) \(got 'no'\)"):
        load_config(str(config_file))
    config_file.write_text("[shell]\nsandboxed = false\n")
    with pytest.raises(ConfigError, match="\\[shell\\] unknown key 'sandboxed': did you mean 'sandbox'"):
        load_config(str(config_file))
    config_file.write_text("[shell]\nmax_timeout_s = 0\n")
    with pytest.raises(ConfigError, match="max_timeout_s must be between"):
        load_config(str(config_file))
