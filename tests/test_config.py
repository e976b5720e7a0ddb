"""The configuration as a user meets it: files found and merged, every bad input a clear error.

Most tests run the ``codeward`` command in a subprocess, the way a person (or an MCP client
starting a server) does; in-process checks cover what a subprocess cannot show cheaply.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeward.config import Config, ConfigError, load_config
from codeward.config.reference import field_docs, reference_markdown
from codeward.tools import default_catalog
from tests.conftest import REPO


def codeward(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeward", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120, env={**os.environ, **(env or {})})


def toolsets_listed(done: subprocess.CompletedProcess[str]) -> set[str]:
    assert done.returncode == 0, done.stderr
    return {tool["toolset"] for tool in json.loads(done.stdout)}


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    """An XDG config home of this test's own (the suite never reads a real user's file)."""
    home = tmp_path / "xdg"
    (home / "codeward").mkdir(parents=True)
    return home


# -- bad input: each error names the file, the table, the key and the fix -------------------------


def test_an_unknown_key_is_refused_with_a_suggestion_and_the_fixed_file_works(root: Path) -> None:
    (root / "codeward.toml").write_text("[shell]\nsandbx = false\n")
    refused = codeward("tools", cwd=root)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "codeward.toml: [shell] unknown key 'sandbx': did you mean 'sandbox'?" in refused.stderr
    (root / "codeward.toml").write_text("[shell]\nsandbox = false\n")
    assert codeward("tools", cwd=root).returncode == 0


def test_a_misspelt_table_gets_a_suggestion_too(tmp_path: Path) -> None:
    path = tmp_path / "codeward.toml"
    path.write_text("[servr]\ntoolsets = ['files']\n")
    with pytest.raises(ConfigError, match=r"unknown table \[servr\]: did you mean \[server\]\?"):
        load_config(str(path), user=False)


@pytest.mark.parametrize(("text", "expected"), [
    ("[server]\noutput_cap_tokens = 'big'\n", "[server] output_cap_tokens must be an integer (got 'big')"),
    ("[server]\noutput_cap_tokens = 50\n", "[server] output_cap_tokens must be an integer of at least 100 (got 50)"),
    ("[web]\nallow_hosts = '10.0.0.0/8'\n", "[web] allow_hosts must be a list of strings (got '10.0.0.0/8')"),
    ("[shell]\nmax_timeout_s = 7200\n", "[shell] max_timeout_s must be between 0 and 3600 seconds (got 7200)"),
    ("[coding]\nbackend = 'vm'\n", "[coding] backend must be one of 'bwrap', 'docker', 'process'"),
    ("[beads]\ntimeout = true\n", "[beads] timeout must be a number (got True)"),
    ("[mcp.servers.fs]\ncommand = 'npx'\ntimeout = '5'\n", "[mcp.servers.fs] timeout must be a number (got '5')"),
    ("[model.profiles.local]\nmodel = 'm'\n",
     "[model.profiles.local] base_url is required (a string); add base_url = ... to the table"),
    ("[web]\nresolver = '8.8.8.8'\n", "[web] resolver is a name-resolution hook for code"),
    ("[coding]\nmodel_api_key = 'sk-secret'\n", "[coding] model_api_key is a secret: set the CODEWARD_MODEL_API_KEY"),
    ("[coding]\nprofile = 'fast'\n", "[coding] profile 'fast': no model configured"),
    ("[agent]\nbase_dirs = 'src'\n", "[agent] base_dirs must be a list of strings or null (got 'src')"),
    ("[coding]\ndocker_images = { perl = 'perl:5' }\n",
     "[coding.docker_images] names unknown languages 'perl'; the languages are python, javascript"),
    ("[coding]\ndocker_images = { python = '--privileged' }\n",
     "[coding.docker_images] has an image that is not a Docker image reference (like python:3.11-slim): "
     "python = '--privileged'"),
    ("[coding]\ndocker_images = 'codeward-sandbox:bookworm'\n", "[coding] docker_images must be"),
    ("[state]\nsentinels = ['10.0.0.1']\n", "[state] sentinels must list each Sentinel as host:port (Sentinel's "
     "default port is 26379, e.g. \"10.0.0.1:26379\"); '10.0.0.1' is not"),
])
def test_a_wrong_value_names_the_table_the_key_and_what_it_must_be(tmp_path: Path, text: str,
                                                                   expected: str) -> None:
    path = tmp_path / "codeward.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(str(path), user=False, environ={})
    assert str(caught.value).startswith(str(path)) or str(caught.value).startswith("codeward.toml")
    assert expected in str(caught.value)


def test_every_problem_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    path = tmp_path / "codeward.toml"
    path.write_text("[server]\ntoolset = ['files']\n[shell]\nnetwork = 'yes'\n[mcp.servers.a__b]\ncommand = 'x'\n")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path), user=False)
    text = str(caught.value)
    assert "3 problems:" in text
    assert "[server] unknown key 'toolset': did you mean 'toolsets'?" in text
    assert "[shell] network must be a boolean (true/false) (got 'yes')" in text
    assert "[mcp.servers.a__b] alias 'a__b' contains '__'" in text


def test_bad_toml_names_the_line_and_nothing_runs(root: Path) -> None:
    (root / "codeward.toml").write_text('[server]\nroots = ["."]\n[shell\n')
    done = codeward("call", "write_file", "path=made.txt", "content=x", cwd=root)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "codeward.toml: invalid TOML" in done.stderr and "line 3" in done.stderr
    assert not (root / "made.txt").exists()


def test_tool_arguments_and_config_keys_share_one_describer(tmp_path: Path) -> None:
    catalog = default_catalog()
    from codeward.kernel.context import ToolContext
    from codeward.kernel.workspace import Workspace

    outcome = catalog.call("read_file", {"pth": "x"}, ToolContext(Workspace.create([tmp_path])))
    assert outcome.is_error and "unknown argument 'pth'; did you mean 'path'?" in outcome.text


# -- Claude-Desktop mcpServers JSON, for every command --------------------------------------------


def test_an_mcp_servers_json_file_is_a_config_for_every_command(root: Path) -> None:
    (root / "notes.txt").write_text("hello\n")
    servers = root / "claude_desktop_config.json"
    servers.write_text(json.dumps({"mcpServers": {
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"], "timeout": 60, "someClientKey": 1},
        "off": {"command": "nothing", "disabled": True},
    }}))
    assert codeward("--config", str(servers), "tools", "--json", cwd=root).returncode == 0
    read = codeward("--config", str(servers), "call", "read_file", "path=notes.txt", cwd=root)
    assert read.returncode == 0 and read.stdout.startswith("hello")
    listed = codeward("--config", str(servers), "servers", "--json", cwd=root)
    states = {row["alias"]: row["state"] for row in json.loads(listed.stdout)}
    assert states == {"time": "ready", "off": "disabled"}, listed.stderr


def test_a_bad_mcp_servers_json_says_which_server_and_what_shape_is_expected(root: Path) -> None:
    bad = root / "servers.json"
    bad.write_text(json.dumps({"mcpServers": {"both": {"command": "x", "url": "http://127.0.0.1:1/mcp"}}}))
    done = codeward("--config", str(bad), "tools", cwd=root)
    assert done.returncode == 2 and 'mcpServers["both"] needs exactly one of \'command\'' in done.stderr
    bad.write_text(json.dumps({"servers": {}}))
    done = codeward("--config", str(bad), "tools", cwd=root)
    assert done.returncode == 2 and 'expected a JSON object with an "mcpServers" object' in done.stderr
    bad.write_text('{"mcpServers": {,}}')
    done = codeward("--config", str(bad), "tools", cwd=root)
    assert done.returncode == 2 and "invalid JSON at line 1, column 17" in done.stderr


# -- discovery ------------------------------------------------------------------------------------


def test_discovery_walks_up_to_the_repository_root_and_no_further(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    repository = outer / "repo"
    deep = repository / "src" / "pkg"
    deep.mkdir(parents=True)
    (repository / ".git").mkdir()
    (outer / "codeward.toml").write_text("[server]\ntoolsets = ['web']\n")
    everything = toolsets_listed(codeward("tools", "--json", cwd=deep))
    assert "web" in everything and len(everything) > 2, "a file above the repository root is not used"
    (repository / "codeward.toml").write_text("[server]\ntoolsets = ['files']\nroots = ['src']\n")
    assert toolsets_listed(codeward("tools", "--json", cwd=deep)) == {"files"}
    (repository / "src" / "here.txt").write_text("found from the file's directory\n")
    read = codeward("call", "read_file", "path=here.txt", cwd=deep)
    assert read.returncode == 0 and "found from the file's directory" in read.stdout, read.stderr


def test_a_git_file_marks_a_repository_root_too(tmp_path: Path) -> None:
    (tmp_path / "codeward.toml").write_text("[server]\ntoolsets = ['web']\n")
    worktree = tmp_path / "worktree"
    (worktree / "sub").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: ../main/.git/worktrees/x\n")
    assert load_config(cwd=worktree / "sub", user=False).path is None


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="changing a file's owner needs root")
def test_a_discovered_file_of_another_user_is_refused(tmp_path: Path) -> None:
    planted = tmp_path / "codeward.toml"
    planted.write_text("[shell]\nsandbox = false\n")
    os.chown(planted, 65534, 65534)
    project = tmp_path / "project"
    project.mkdir()
    done = codeward("tools", cwd=project)
    assert done.returncode == 2 and "belongs to another user (uid 65534)" in done.stderr
    assert "Pass --config" in done.stderr
    assert codeward("--config", str(planted), "tools", cwd=project).returncode == 0


# -- the user file --------------------------------------------------------------------------------


def test_the_user_file_lies_under_the_project_file(root: Path, user_home: Path) -> None:
    (user_home / "codeward" / "config.toml").write_text(
        "[server]\nblacklist = ['*.secret']\ntoolsets = ['files', 'web']\n"
        "[model]\ndefault = 'mine'\n[model.profiles.mine]\nbase_url = 'http://127.0.0.1:9/v1'\nmodel = 'm'\n")
    (root / "codeward.toml").write_text("[server]\nblacklist = ['private.txt']\ntoolsets = ['files']\n")
    for name in ("a.secret", "private.txt", "open.txt"):
        (root / name).write_text(f"{name} content\n")
    env = {"XDG_CONFIG_HOME": str(user_home)}
    assert toolsets_listed(codeward("tools", "--json", cwd=root, env=env)) == {"files"}, "the project wins"
    for protected in ("a.secret", "private.txt"):  # blacklists add up
        refused = codeward("call", "read_file", f"path={protected}", cwd=root, env=env)
        assert refused.returncode == 1 and "blacklisted" in refused.stderr
    assert codeward("call", "read_file", "path=open.txt", cwd=root, env=env).returncode == 0
    config = load_config(cwd=root, environ=env)
    assert config.model.resolve(None).base_url == "http://127.0.0.1:9/v1", "profiles come from the user file"
    assert config.user_path == user_home / "codeward" / "config.toml"


def test_roots_cannot_be_set_in_the_user_file(root: Path, user_home: Path) -> None:
    (user_home / "codeward" / "config.toml").write_text("[server]\nroots = ['/']\n")
    done = codeward("tools", cwd=root, env={"XDG_CONFIG_HOME": str(user_home)})
    assert done.returncode == 2
    assert "config.toml: [server] roots belongs to a project" in done.stderr


def test_a_project_profile_replaces_the_user_profile_of_that_name_whole(tmp_path: Path, user_home: Path) -> None:
    (user_home / "codeward" / "config.toml").write_text(
        "[model.profiles.p]\nbase_url = 'http://user/v1'\nmodel = 'u'\nkey_env = 'USER_KEY'\n"
        "[model.profiles.q]\nbase_url = 'http://q/v1'\nmodel = 'q'\n")
    (tmp_path / "codeward.toml").write_text("[model.profiles.p]\nbase_url = 'http://project/v1'\nmodel = 'p'\n")
    config = load_config(cwd=tmp_path, environ={"XDG_CONFIG_HOME": str(user_home)})
    assert config.model.profiles["p"].base_url == "http://project/v1" and config.model.profiles["p"].key_env is None
    assert config.model.profiles["q"].model == "q"


# -- the environment ------------------------------------------------------------------------------


def test_an_environment_variable_overrides_both_files(tmp_path: Path, user_home: Path) -> None:
    (user_home / "codeward" / "config.toml").write_text("[coding]\nbackend = 'docker'\n[index]\nctags = false\n")
    (tmp_path / "codeward.toml").write_text("[coding]\nbackend = 'bwrap'\n[registry]\nhub_dir = 'hub'\n")
    environ = {"XDG_CONFIG_HOME": str(user_home)}
    config = load_config(cwd=tmp_path, environ=environ)
    assert config.coding.backend == "bwrap" and config.index.ctags is False
    assert config.registry.hub_dir == (tmp_path / "hub").resolve()
    overridden = load_config(cwd=tmp_path, environ={**environ, "CODEWARD_SANDBOX": "process",
                                                    "CODEWARD_INDEX_CTAGS": "1", "CODEWARD_REGISTRY_HUB": "/srv/hub",
                                                    "CODEWARD_MODEL": "coder", "CODEWARD_MODEL_API_KEY": "k"})
    assert overridden.sandbox.backend == "process" and overridden.coding.backend == "bwrap"
    assert overridden.index.ctags is True
    assert overridden.registry.hub_dir == Path("/srv/hub")
    assert (overridden.coding.model, overridden.coding.model_api_key) == ("coder", "k")


def test_a_bad_environment_value_names_the_variable(root: Path) -> None:
    done = codeward("tools", cwd=root, env={"CODEWARD_SANDBOX": "vm", "CODEWARD_INDEX_CTAGS": "maybe"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "environment: 2 problems" in done.stderr
    assert "environment variable CODEWARD_SANDBOX must be one of 'auto', 'bwrap', 'docker', 'process'" in done.stderr
    assert "environment variable CODEWARD_INDEX_CTAGS must be a boolean" in done.stderr
    assert codeward("tools", cwd=root, env={"CODEWARD_SANDBOX": ""}).returncode == 0, "empty counts as unset"


def test_index_ctags_switch_reaches_the_index_command(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for n in range(80):  # big enough for the quick tier
        (project / f"m{n}.py").write_text(f"def f{n}():\n    return {n}\n")
    (project / "codeward.toml").write_text("[index]\nctags = false\n")
    exact = codeward("index", "--definitions-only", ".", cwd=project)
    assert exact.returncode == 0, exact.stderr
    assert "definitions: 80 source files" in exact.stderr and "by universal-ctags" not in exact.stderr
    if not any((Path(d) / "ctags").exists() for d in os.environ.get("PATH", "").split(os.pathsep)):
        pytest.skip("universal-ctags is not installed; the other half of the switch cannot be shown")
    quick = codeward("index", "--definitions-only", "--rebuild", ".", cwd=project, env={"CODEWARD_INDEX_CTAGS": "1"})
    assert quick.returncode == 0 and "80 by universal-ctags" in quick.stderr, quick.stderr


# -- the reference --------------------------------------------------------------------------------


def test_docs_configuration_md_is_generated_from_the_models() -> None:
    on_disk = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert on_disk == reference_markdown(), (
        "docs/configuration.md is stale: regenerate it with "
        "`python -m codeward.config.reference > docs/configuration.md`")


def test_every_key_is_documented() -> None:
    text = reference_markdown()
    for name, info in Config.model_fields.items():
        assert f"## [{name}]" in text
        table = info.annotation
        assert isinstance(table, type)
        docs = field_docs(table)  # type: ignore[arg-type]
        for key, field in table.model_fields.items():  # type: ignore[attr-defined]
            extra = field.json_schema_extra
            if isinstance(extra, dict) and extra.get("code_only"):
                continue
            assert docs.get(key), f"[{name}] {key} has no docstring"


def test_the_defaults_built_without_validating_are_what_validating_nothing_gives() -> None:
    from codeward.config.base import defaults

    built, validated = defaults(Config), Config.model_validate({})
    assert built == validated and built.model_dump() == validated.model_dump()
    assert built.model_fields_set == validated.model_fields_set == set()
    for name in Config.model_fields:
        table, expected = getattr(built, name), getattr(validated, name)
        assert type(table) is type(expected) and table == expected and table.model_fields_set == set()


NO_FILE_PROBE = """
import json, sys
from codeward.config import Config, load_config
from codeward.config.server import ServerSettings
config = load_config()
first = Config.__pydantic_complete__
try:
    load_config(environ={"CODEWARD_INDEX_CTAGS": "sometimes"})
    error = ""
except Exception as exc:
    error = str(exc)
print(json.dumps({"built_at_load": first, "cap": config.server.output_cap_tokens, "error": error,
                  "default_cap": ServerSettings.model_fields["output_cap_tokens"].default}))
"""


def test_a_run_without_configuration_builds_no_validator_and_bad_values_are_still_refused(tmp_path: Path) -> None:
    """A server an agent starts with no codeward.toml and no override variable skips building the tables'
    validators (start-up); the first value to validate builds them, and a wrong one is still refused."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEWARD_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    done = subprocess.run([sys.executable, "-c", NO_FILE_PROBE], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    seen = json.loads(done.stdout)
    assert seen["built_at_load"] is False
    assert seen["cap"] == seen["default_cap"]
    assert "CODEWARD_INDEX_CTAGS" in seen["error"]
