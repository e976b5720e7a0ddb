"""Running registry tools through their chains: the subprocess primitive in the sandbox, the
http_client primitive behind the SSRF guard, saved and rotated outputs, timeouts that kill every
process of the run, and per-tool packages installed from the declared pins only."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import psutil
import pytest

from codeward.apps.cli import main as cli_main
from codeward.config.web import WebSettings
from codeward.engines.registry.served import ServedTools
from codeward.engines.registry.settings import RegistrySettings
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import CallInfo, Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.surface import CatalogSurface
from codeward.kernel.workspace import Workspace
from tests.conftest import snapshot
from tests.process_support import http_handler_server
from tests.registry_support import person, python_tool, runtime, sign, user_space, without_state, write
from tests.sandbox_support import bwrap_works

__all__ = ["person", "user_space"]

pytestmark = pytest.mark.skipif(not bwrap_works(), reason="registry tools run in the bwrap sandbox, which cannot "
                                "create namespaces here")

Call = Callable[..., ToolOutcome]


def outputs(root: Path, name: str) -> list[Path]:
    return sorted((root / ".ai/outputs/tools" / name).glob("output_*.json"))


def test_new_sign_search_run_and_outputs_rotate_at_ten(root: Path, user_space: Path, call: Call,
                                                       person: Call) -> None:
    assert cli_main(["registry", "new", "greet", "--root", str(root), "--description", "Say hello to a person."]) == 0
    sign(person, "greet")
    found = call("registry_search", query="hello person").text.splitlines()
    assert found[1].startswith("- greet [tool, project, utility, v0.1.0, signed] Say hello to a person.")
    ran = call("registry_execute", name="greet", params={"name": "Ada"})
    assert not ran.is_error, ran.text
    assert json.loads(ran.text.split("\n[greet ran")[0]) == {"greeting": "Hello, Ada!"}
    assert "via greet → python_runtime → subprocess" in ran.text
    first = outputs(root, "greet")
    assert len(first) == 1
    saved = json.loads(first[0].read_text())
    assert saved["status"] == "ok" and saved["result"] == {"greeting": "Hello, Ada!"}
    assert saved["params"] == {"name": "Ada"} and saved["chain"] == ["greet", "python_runtime", "subprocess"]
    for i in range(11):
        assert not call("registry_execute", name="greet", params={"name": f"n{i}"}).is_error
    kept = outputs(root, "greet")
    assert len(kept) == 10
    assert first[0] not in kept
    assert [json.loads(p.read_text())["params"]["name"] for p in kept] == [f"n{i}" for i in range(1, 11)]


def test_dry_run_checks_everything_and_runs_nothing(root: Path, user_space: Path, call: Call,
                                                    person: Call) -> None:
    marker = root / "ran.txt"
    write(root, ".ai/tools/touch.py", python_tool(body=f"    open({str(marker)!r}, 'w').write(name)"))
    sign(person, "touch")
    before = snapshot(root)
    planned = call("registry_execute", name="touch", params={"name": "x"}, dry_run=True)
    assert not planned.is_error
    assert "dry run of touch (touch → python_runtime → subprocess): nothing was run." in planned.text
    assert "standard library only" in planned.text
    assert not marker.exists() and without_state(snapshot(root)) == without_state(before)


def test_a_large_result_is_returned_bounded_with_the_path_of_the_whole(root: Path, user_space: Path,
                                                                         call: Call, person: Call) -> None:
    write(root, ".ai/tools/big.py", python_tool(body="    return [f'line {i:06d}' for i in range(n)]",
                                                params="n: int"))
    sign(person, "big")
    ran = call("registry_execute", name="big", params={"n": 5000})
    assert not ran.is_error
    assert '"line 000000"' in ran.text and '"line 004999"' not in ran.text
    saved = outputs(root, "big")[-1]
    shown = saved.relative_to(root).as_posix()
    assert f"the whole result is saved as {shown}: read it with read_file" in ran.text
    assert json.loads(saved.read_text())["result"][-1] == "line 004999"
    whole = call("read_file", path=shown, offset=5000, limit=20)
    assert '"line 004999"' in whole.text


def test_the_tool_runs_in_the_sandbox_with_only_what_it_declares(root: Path, user_space: Path, call: Call,
                                                                 person: Call, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("outside the roots\n")
    monkeypatch.setenv("SERVER_SECRET", "s3cr3t-of-the-server")
    monkeypatch.setenv("GREETING", "hello from the host")
    body = "\n".join([
        "    import os, sys",
        "    print('chatter on stdout')",
        "    try:",
        f"        leaked = open({str(secret)!r}).read()",
        "    except OSError as exc:",
        "        leaked = type(exc).__name__",
        "    open('written.txt', 'w').write('from the tool')",
        "    return {'pid': os.getpid(), 'cwd': os.getcwd(), 'n': n * 2, 'uid': os.getuid(),",
        "            'tool': os.environ['CODEWARD_TOOL_NAME'], 'greeting': os.environ.get('GREETING'),",
        "            'secret': os.environ.get('SERVER_SECRET'), 'outside': leaked, 'file': __file__,",
        "            'paths': [p for p in sys.path if 'site-packages' in p or 'dist-packages' in p]}",
    ])
    write(root, ".ai/tools/whoami.py", python_tool(body=body, params="n: int", header='__env__ = ["GREETING"]'))
    sign(person, "whoami")
    ran = call("registry_execute", name="whoami", params={"n": 21})
    assert not ran.is_error, ran.text
    result = json.loads(ran.text.split("\n[stderr]")[0])
    assert result["n"] == 42 and result["pid"] != __import__("os").getpid()
    assert result["cwd"] == str(root.resolve()) and result["tool"] == "whoami"
    assert result["greeting"] == "hello from the host"  # declared: passed
    assert result["secret"] is None  # the server's other variables: not
    assert result["outside"] == "FileNotFoundError"  # files outside the roots do not exist for it
    assert result["file"] == "/codeward/tool/tools/whoami.py"  # the staged, verified bytes
    assert result["paths"] == []  # the standard library only: none of the server's or the system's packages
    assert (root / "written.txt").read_text() == "from the tool"  # its writes came back through the gate
    assert "[stderr]\nchatter on stdout" in ran.text


def test_failures_of_the_tool_are_reported_and_saved(root: Path, user_space: Path, call: Call, person: Call) -> None:
    write(root, ".ai/tools/crash.py", python_tool(body="    raise ValueError('bad value: ' + name)"))
    write(root, ".ai/tools/needs_pkg.py", python_tool(body="    import importlib\n"
                                                           "    importlib.import_module('pydantic')"))
    write(root, ".ai/tools/odd_result.py", python_tool(body="    return {1, 2}"))
    for name in ("crash", "needs_pkg", "odd_result"):
        sign(person, name)
    crashed = call("registry_execute", name="crash", params={"name": "zz"})
    assert crashed.is_error and "crash raised ValueError: bad value: zz" in crashed.text
    assert "Traceback" in crashed.text and "failed run is saved as .ai/outputs/tools/crash/" in crashed.text
    assert json.loads(outputs(root, "crash")[0].read_text())["status"] == "error"
    isolated = call("registry_execute", name="needs_pkg", params={"name": "x"})
    assert isolated.is_error and "No module named 'pydantic'" in isolated.text
    assert "__dependencies__" in isolated.text
    odd = call("registry_execute", name="odd_result", params={"name": "x"})
    assert odd.is_error and "not JSON-serializable" in odd.text
    wrong = call("registry_execute", name="crash", params={"nom": "x"})
    assert wrong.is_error and "main() does not accept these parameters" in wrong.text


def test_a_timeout_kills_the_tool_and_everything_it_started(root: Path, user_space: Path, call: Call,
                                                            person: Call) -> None:
    marker = "61.4242"  # a sleep only this test starts
    body = "\n".join([
        "    import subprocess, time",
        f"    subprocess.Popen(['sleep', '{marker}'])",
        "    time.sleep(60)",
    ])
    write(root, ".ai/tools/hang.py", python_tool(body=body, params=""))
    sign(person, "hang")
    hung = call("registry_execute", name="hang", timeout=2)
    assert hung.is_error and "hang ran longer than 2 s and was killed" in hung.text
    deadline = time.monotonic() + 10
    while any(marker in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])):
        assert time.monotonic() < deadline, "the tool's child process survived the timeout"
        time.sleep(0.05)


class _Api(BaseHTTPRequestHandler):
    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.startswith("/v1/items/"):
            self._send(200, {"path": self.path, "token": self.headers.get("X-Token"), "host": self.headers["Host"]})
        else:
            self._send(404, {"error": f"no route {self.path}"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self._send(201, {"received": json.loads(self.rfile.read(length) or b"null")})

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def api_port() -> Iterator[int]:
    with http_handler_server(_Api) as port:
        yield port


def api_tool(url: str, method: str = "GET") -> str:
    return "\n".join([
        '"""Fetch an item from the local API."""',
        '__version__ = "1.0.0"',
        '__tool_type__ = "api"',
        '__executor_id__ = "local_api"',
        '__category__ = "web"',
        '__env__ = ["API_TOKEN"]',
        f'CONFIG = {{"method": "{method}", "url": "{url}", "headers": {{"X-Token": "${{API_TOKEN}}"}}}}',
        "",
    ])


def test_api_tool_runs_through_a_runtime_to_http_client(root: Path, user_space: Path, catalog: Catalog,
                                                       api_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_TOKEN", "t0ken")
    write(root, ".ai/tools/runtimes/local_api.py",
          runtime("local_api", "http_client", f'{{"base_url": "http://127.0.0.1:{api_port}/v1", "timeout": 5}}'))
    write(root, ".ai/tools/get_item.py", api_tool("items/{item_id}"))
    write(root, ".ai/tools/post_item.py", api_tool("items", "POST"))
    write(root, ".ai/tools/lost_item.py", api_tool(f"http://127.0.0.1:{api_port}/nowhere/{{item_id}}"))
    allowed = ToolContext(Workspace.create([root]), services=Services(WebSettings(allow_hosts=("127.0.0.1",))))
    guarded = ToolContext(Workspace.create([root]))

    def call(ctx: ToolContext, tool: str, **arguments: Any) -> ToolOutcome:
        return catalog.call(tool, arguments, ctx)

    signer = allowed.child(call=CallInfo(approved=True))
    for name in ("get_item", "post_item", "lost_item"):
        signed = call(signer, "registry_execute", name=name, action="sign")
        assert not signed.is_error, signed.text
    got = call(allowed, "registry_execute", name="get_item", params={"item_id": "a b", "verbose": True})
    assert not got.is_error, got.text
    answer = json.loads(got.text.split("\n[get_item ran")[0])
    assert answer["status"] == 200 and answer["body"]["token"] == "t0ken"
    assert answer["body"]["path"] == "/v1/items/a%20b?verbose=true"
    assert answer["body"]["host"] == f"127.0.0.1:{api_port}"
    assert "via get_item → local_api → http_client" in got.text
    assert json.loads(outputs(root, "get_item")[0].read_text())["result"]["status"] == 200
    posted = call(allowed, "registry_execute", name="post_item", params={"title": "new", "n": 2})
    assert json.loads(posted.text.split("\n[post_item ran")[0])["body"] == {"received": {"title": "new", "n": 2}}
    lost = call(allowed, "registry_execute", name="lost_item", params={"item_id": "1"})
    assert lost.is_error and "answered 404 Not Found" in lost.text and "no route /nowhere/1" in lost.text
    missing = call(allowed, "registry_execute", name="get_item", params={})
    assert missing.is_error and "needs the parameter(s) item_id" in missing.text

    refused = call(guarded, "registry_execute", name="get_item", params={"item_id": "1"})
    assert refused.is_error and "is a loopback address" in refused.text and "allow_hosts" in refused.text


def test_mcp_tool_items_call_a_served_tool_with_preset_arguments(root: Path, user_space: Path,
                                                                 catalog: Catalog) -> None:
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    text = "\n".join(['"""The first two lines of the notes."""', '__version__ = "1.0.0"',
                      '__tool_type__ = "mcp_tool"', "__executor_id__ = None", '__category__ = "shortcuts"',
                      'CONFIG = {"tool": "read_file", "arguments": {"path": "notes.txt", "limit": 2}}', ""])
    write(root, ".ai/tools/head_notes.py", text)
    ctx = ToolContext(Workspace.create([root]), services=Services(ServedTools(CatalogSurface(catalog))))
    signer = ctx.child(call=CallInfo(approved=True))
    assert not catalog.call("registry_execute", {"name": "head_notes", "action": "sign"}, signer).is_error
    ran = catalog.call("registry_execute", {"name": "head_notes", "params": {}}, ctx)
    assert not ran.is_error and ran.text.startswith("one\ntwo\n\n[lines 1-2 of 3")
    alone = catalog.call("registry_execute", {"name": "head_notes"}, ToolContext(Workspace.create([root])))
    assert alone.is_error and "which this server does not serve" in alone.text


class _Recorder:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        self.lines.append(message or "")

    def log(self, level: str, message: str) -> None:
        self.lines.append(message)


@pytest.fixture(scope="session")
def shared_venvs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tool environments shared by the tests of one session (built once)."""
    return tmp_path_factory.mktemp("registry-venvs")


def test_packages_are_declared_pinned_and_installed_with_a_persons_yes(root: Path, user_space: Path,
                                                                       catalog: Catalog, shared_venvs: Path,
                                                                       tmp_path: Path) -> None:
    assert importlib.util.find_spec("humanize") is None, "humanize must not be installed in the test environment"
    before = sorted(d.metadata["Name"] for d in importlib.metadata.distributions())
    body = "    import humanize\n    return {'size': humanize.naturalsize(n), 'from': humanize.__file__}"
    path = write(root, ".ai/tools/sizes.py", python_tool(body=body, params="n: int", header="import humanize"))
    recorder = _Recorder()
    settings = RegistrySettings(user_dir=user_space, venv_dir=shared_venvs, install_timeout=300)
    ctx = ToolContext(Workspace.create([root]), reporter=recorder, services=Services(settings))
    person = ctx.child(call=CallInfo(approved=True))

    guessed = catalog.call("registry_execute", {"name": "sizes", "action": "sign"}, person)
    assert guessed.is_error and "imports 'humanize', which is neither the standard library" in guessed.text
    assert '__dependencies__ = ["humanize==VERSION"]' in guessed.text and not list(shared_venvs.iterdir())
    ranged_header = 'import humanize\n__dependencies__ = ["humanize>=4"]'
    path.write_text(python_tool(body=body, params="n: int", header=ranged_header))
    ranged = catalog.call("registry_execute", {"name": "sizes", "action": "sign"}, person)
    assert ranged.is_error and "'humanize>=4' is not pinned to one version" in ranged.text
    path.write_text(python_tool(body=body, params="n: int",
                                header='import humanize\n__dependencies__ = ["humanize==4.9.0"]'))
    signed = catalog.call("registry_execute", {"name": "sizes", "action": "sign"}, person)
    assert not signed.is_error, signed.text
    assert "packages humanize==4.9.0" in signed.text
    assert any("installing humanize==4.9.0 for sizes" in line for line in recorder.lines)
    assert "its own packages humanize==4.9.0" in catalog.call("registry_help", {"name": "sizes"}, ctx).text

    recorder.lines.clear()
    first = catalog.call("registry_execute", {"name": "sizes", "params": {"n": 3_000_000}}, ctx)
    assert not first.is_error, first.text
    result = json.loads(first.text.split("\n[sizes ran")[0])
    assert result["size"] == "3.0 MB" and result["from"].startswith("/codeward/site/humanize/")
    assert recorder.lines == [] or all("running for" in line for line in recorder.lines)  # installed once, reused
    assert importlib.util.find_spec("humanize") is None
    assert sorted(d.metadata["Name"] for d in importlib.metadata.distributions()) == before

    elsewhere = tmp_path / "other-venvs"
    moved = settings.model_copy(update={"venv_dir": elsewhere})
    fresh = ToolContext(Workspace.create([root]), services=Services(moved))
    unasked = catalog.call("registry_execute", {"name": "sizes", "params": {"n": 1}}, fresh)
    assert unasked.is_error and "installing humanize==4.9.0 for sizes the first time needs a person's" in unasked.text
    assert "codeward registry run sizes" in unasked.text
    assert not elsewhere.exists() or not any(elsewhere.iterdir())


def test_a_local_module_is_never_installed(root: Path, user_space: Path, call: Call, person: Call,
                                          tmp_path: Path) -> None:
    write(root, ".ai/tools/lib/helpers.py", "def shout(text):\n    return text.upper() + '!'\n")
    write(root, ".ai/tools/loud.py", python_tool(body="    import helpers\n    return helpers.shout(name)"))
    signed = sign(person, "loud")
    assert "file lib/helpers.py" in signed.text
    ran = call("registry_execute", name="loud", params={"name": "hey"})
    assert not ran.is_error and ran.text.startswith("HEY!\n")
    assert not (tmp_path / "venvs").exists() or not any((tmp_path / "venvs").iterdir())
