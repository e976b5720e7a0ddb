"""The ``codeward`` command as a person runs it: real subprocesses, one-line errors, fresh docs."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from codeward import __version__
from codeward.apps.docs import tools_markdown
from codeward.tools import default_catalog, served_catalog, toolset_choice
from tests.conftest import REPO


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeward", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=60)


def test_version() -> None:
    assert run("--version").stdout.strip() == f"codeward {__version__}"


def test_docs_tools_md_is_generated_from_the_catalog() -> None:
    on_disk = (REPO / "docs" / "tools.md").read_text(encoding="utf-8")
    assert on_disk == tools_markdown(default_catalog()), (
        "docs/tools.md is stale: regenerate it with `codeward tools --markdown > docs/tools.md`"
    )


def test_tools_lists_every_tool_in_each_format() -> None:
    names = served_catalog(toolset_choice(None)).names()  # what a server lists by default (the opt-in toolsets are not)
    plain = run("tools").stdout
    assert all(name in plain for name in names)
    listed = json.loads(run("tools", "--json").stdout)
    assert [t["name"] for t in listed] == names and all("inputSchema" in t for t in listed)


def test_call_runs_a_tool_with_typed_arguments(root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    done = run("call", "get_file_slice", "path=a.txt", "start_line=2", "end_line=3", cwd=root)
    assert done.returncode == 0 and done.stdout == "two\nthree\n\n"
    as_json = json.loads(run("call", "read_file", "path=a.txt", "--json", cwd=root).stdout)
    assert as_json == {"command": "call", "tool": "read_file", "is_error": False, "text": "one\ntwo\nthree\n",
                       "structured": None, "errors": []}
    numeric_name = root / "42"
    numeric_name.write_text("answer\n")
    assert run("call", "read_file", "path=42", cwd=root).stdout == "answer\n\n"


def test_call_errors_are_one_clear_line_and_exit_non_zero(root: Path) -> None:
    refused = run("call", "read_file", "path=../../etc/passwd", cwd=root)
    assert refused.returncode == 1 and "outside the workspace" in refused.stderr and "Traceback" not in refused.stderr
    unknown = run("call", "read_fiel", cwd=root)
    assert unknown.returncode == 2 and unknown.stderr.startswith("codeward: error: unknown tool 'read_fiel'")
    assert "read_file" in unknown.stderr
    malformed = run("call", "read_file", "path", cwd=root)
    assert malformed.returncode == 2 and "not key=value" in malformed.stderr
    bad_root = run("call", "read_file", "path=a", "--root", str(root / "missing"), cwd=root)
    assert bad_root.returncode == 2 and "is not a directory" in bad_root.stderr


def test_config_file_sets_roots_blacklist_and_toolsets(root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "data.csv").write_text("x\n")
    (root / "sub" / "keep.txt").write_text("kept\n")
    (root / "codeward.toml").write_text('[server]\nroots = ["sub"]\nblacklist = ["*.csv"]\ntoolsets = ["files"]\n')
    assert run("call", "read_file", "path=keep.txt", cwd=root).stdout == "kept\n\n"
    refused = run("call", "read_file", "path=data.csv", cwd=root)
    assert refused.returncode == 1 and "blacklisted" in refused.stderr
    (root / "codeward.toml").write_text("[server\n")
    broken = run("tools", cwd=root)
    assert broken.returncode == 2 and "invalid TOML" in broken.stderr and "Traceback" not in broken.stderr
    (root / "codeward.toml").write_text('[server]\ntoolsets = ["nope"]\n')
    unknown = run("tools", cwd=root)
    assert unknown.returncode == 2 and "unknown toolsets in config: nope" in unknown.stderr


def test_serve_from_a_terminal_refuses_remote_bind_without_token(root: Path) -> None:
    done = run("serve", str(root), "--http", "--host", "0.0.0.0")
    assert done.returncode == 2 and "--allow-remote" in done.stderr


def test_serve_started_from_a_terminal_explains_itself(root: Path) -> None:
    import os
    import pty

    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "codeward", "serve", str(root)], stdin=terminal,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    os.close(terminal)
    try:
        assert proc.stderr is not None
        banner = [proc.stderr.readline() for _ in range(3)]
    finally:
        proc.kill()
        proc.wait(timeout=10)
        os.close(controller)
    assert "serving" in banner[0] and str(root) in banner[0]
    assert "MCP server" in banner[1]
    assert "claude mcp add codeward -- " in banner[2] and banner[2].rstrip().endswith(f"serve {root}")


def test_beads_init_then_tools_work_from_the_command_line(root: Path) -> None:
    init = run("beads", "init", "--prefix", "demo", cwd=root)
    assert init.returncode == 0 and "Initialized a Beads workspace" in init.stdout
    created = run("call", "bd_create", "title=first", "description=the first bead", cwd=root)
    assert created.returncode == 0 and created.stdout.startswith("Created demo-")
    assert "first" in run("call", "bd_ready", cwd=root).stdout


def test_review_exit_code_fails_the_build_on_a_gate(root: Path) -> None:
    (root / "bad.py").write_text("import os\n\n\ndef f(x):\n    return eval(x)\n")
    passing = run("review", "bad.py", "--format", "json", cwd=root)
    assert passing.returncode == 0 and json.loads(passing.stdout)
    failing = run("review", "bad.py", "--gates", "max_warnings=0", cwd=root)
    assert failing.returncode == 1 and "FAIL max_warnings" in failing.stderr


def test_run_executes_a_program_in_the_sandbox_with_its_exit_code(root: Path) -> None:
    (root / "greet.py").write_text("import sys\nprint('hello', input())\nsys.exit(3)\n")
    done = subprocess.run([sys.executable, "-m", "codeward", "run", "greet.py"], cwd=root, input="world\n",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3 and done.stdout == "hello world\n"
    missing = run("run", "nope.py", cwd=root)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def _time_server_config(root: Path, extra: str = "") -> None:
    (root / "codeward.toml").write_text(
        f'[mcp]\n{extra}\n[mcp.servers.time]\ncommand = "{sys.executable}"\nargs = ["-m", "mcp_server_time"]\n')


def test_servers_and_call_through_the_gateway(root: Path) -> None:
    _time_server_config(root, 'auto_approve = ["time__*"]')
    listed = run("servers", "--json", cwd=root)
    assert listed.returncode == 0, listed.stderr
    [server] = json.loads(listed.stdout)
    assert server["alias"] == "time" and server["state"] == "ready" and server["tools"] >= 2
    called = run("call", "time__get_current_time", "timezone=UTC", "--json", cwd=root)
    assert called.returncode == 0, called.stderr
    assert '"timezone": "UTC"' in json.loads(called.stdout)["text"]


def test_gateway_serves_upstream_tools_to_an_mcp_client(root: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    _time_server_config(root)

    async def session() -> list[str]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "codeward", "gateway", "--config",
                                                                     str(root / "codeward.toml")], cwd=str(root))
        async with Client(params) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert "time__get_current_time" in anyio.run(session)


def test_index_command_builds_what_find_symbol_uses(root: Path) -> None:
    source = "class Shape:\n    def area(self):\n        return helper()\n\n\ndef helper():\n    return 1\n"
    (root / "m.py").write_text(source)
    built = run("index", ".", cwd=root)
    assert built.returncode == 0 and "indexed" in built.stdout + built.stderr
    assert (root / ".codeward" / "index.sqlite").is_file()
    found = run("call", "find_symbol", "name=helper", cwd=root)
    assert found.returncode == 0 and "m.py:6-7" in found.stdout and "function helper" in found.stdout
    missing = run("index", "nowhere", cwd=root)
    assert missing.returncode != 0 and "Traceback" not in missing.stderr


def test_a_command_registers_only_itself_and_parses_as_with_every_command() -> None:
    """Running one command imports only its own module; its flags and help are the same as in
    the whole parser (which ``codeward --help`` and an unknown command still get)."""
    from codeward.apps.cli import COMMANDS, build_parser

    def sub_help(parser: argparse.ArgumentParser, command: str) -> str:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return action.choices[command.replace("_", "-")].format_help()

    full = build_parser()
    for command in COMMANDS:
        assert sub_help(build_parser(only=command), command) == sub_help(full, command)
    probe = ("import sys\nfrom codeward.apps.cli import main\nsys.argv = ['codeward', 'serve', '--help']\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('codeward.apps.cli.')), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert "usage: codeward serve" in out.stdout and "--token-env" in out.stdout
    loaded = out.stderr.strip().splitlines()[-1]
    assert "'codeward.apps.cli.serve'" in loaded and "'codeward.apps.cli.chat'" not in loaded
    everything = subprocess.run([sys.executable, "-m", "codeward", "--help"], capture_output=True, text=True,
                                timeout=120)
    assert all(command.replace("_", "-") in everything.stdout for command in COMMANDS)
    unknown = subprocess.run([sys.executable, "-m", "codeward", "serv"], capture_output=True, text=True,
                             timeout=120)
    assert unknown.returncode == 2 and "invalid choice: 'serv'" in unknown.stderr and "serve" in unknown.stderr
