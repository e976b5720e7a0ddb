"""Files the person's own tools run later (issue "Nothing the agent writes is read or run on the
host", route 2), through real MCP sessions as root and as a normal user, the host checked afterwards.

The project has the hooks a developer has (``core.hooksPath = .githooks`` running the pre-commit
framework: :meth:`Host.install_hooks`), so the host's ``git commit`` of every check runs whatever
a hook or ``.pre-commit-config.yaml`` names. Each route of the review is tried with every writer —
file tools, moves, deletions, folders, patches, symbol edits, undo, a shell run's write-back —
under ``auto_approve = ["*"]``: with nobody to ask each is refused; with a person answering,
they see the diff (the executable bit included) and nothing is written unless they say yes.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.redteam.harness import Answer, Host, Session
from tests.sandbox_support import bwrap_works

pytestmark = pytest.mark.anyio




def auto_approve_all(host: Host) -> str:
    """The operator approves every tool in advance; the gateway serves codeward's own tools under their
    names, and one upstream server (it needs one)."""
    env = f"env = {{ PYTHONPATH = {json.dumps(host.principal.pythonpath)} }}\n" if host.principal.pythonpath else ""
    return ('\n[mcp]\nnative = true\nauto_approve = ["*"]\n\n'
            f'[mcp.servers.time]\ncommand = {json.dumps(host.principal.python[0])}\n'
            'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\ntimeout = 30\n' + env)


def hook(host: Host, name: str = "hook") -> str:
    return f"#!/bin/sh\n{host.marker_command(name)}\n"


def local_hook(host: Host) -> str:
    """A ``repo: local`` pre-commit hook that runs a command on the next commit."""
    return ("repos:\n- repo: local\n  hooks:\n  - id: planted\n    name: planted\n"
            f"    entry: {host.marker_command('pre-commit-local')}\n    language: system\n    always_run: true\n"
            "    pass_filenames: false\n")


def folder_open_task(host: Host) -> str:
    return json.dumps({"version": "2.0.0", "tasks": [{"label": "setup", "type": "shell",
                                                       "command": host.marker_command("vscode-task"),
                                                       "runOptions": {"runOn": "folderOpen"}}]})


def mcp_server(host: Host) -> str:
    return json.dumps({"mcpServers": {"helper": {"command": "sh", "args": ["-c", host.marker_command("mcp")]}}})


def person_configures(host: Host, extra: str) -> None:
    config = host.project / "codeward.toml"
    config.write_text(config.read_text() + extra)
    os.chown(config, host.principal.uid, host.principal.gid)
    host.rebaseline()


def scene(host: Host) -> None:
    """The person's project: hooks installed, an executable script, a folder holding editor settings,
    a helper module in the hooks folder."""
    host.install_hooks()
    host.place("tools/check.sh", "#!/bin/sh\necho checking\n", 0o755)
    host.place("kit/.vscode/settings.json", "{}\n")
    host.place(".githooks/hooklib.py", "def run():\n    return 0\n")
    host.rebaseline()


def person_deletes(host: Host, rel: str) -> None:
    """The person deletes ``rel`` with codeward's own tool (a checkpoint ``undo`` could revert), as
    ``codeward call delete_path`` would do it (in this process: a scene, not an attack)."""
    from codeward.approval.policy import by_person
    from codeward.config import load_config
    from codeward.serving.stack import build_stack

    config = load_config(str(host.project / "codeward.toml"), cwd=host.project, user=False)  # theirs, named
    stack = build_stack(config, [host.project])
    outcome = stack.catalog.call("delete_path", {"path": rel}, by_person(stack.context(), writes=True))
    assert not outcome.is_error, outcome.text
    for path in [host.project / ".codeward", *(host.project / ".codeward").rglob("*")]:
        os.chown(path, host.principal.uid, host.principal.gid, follow_symlinks=False)
    host.approve(rel)


def asks_a_person(answer: Answer, *fragments: str) -> bool:
    return answer.refused("a file the host runs later", "approv", *fragments)


async def refused_each(session: Session, calls: list[tuple[str, dict[str, Any]]]) -> None:
    for name, arguments in calls:
        answer = await session.call(name, arguments)
        assert asks_a_person(answer), f"{name}({arguments}) was not held for a person: {answer.text}"


async def test_every_writer_asks_a_person_and_only_their_yes_writes(host: Host) -> None:
    """Plain ``serve``: the client's user is asked, during the call (a handshake-era session). They say
    no to everything but the one change marked for them."""
    scene(host)
    person_deletes(host, ".githooks/hooklib.py")
    patch = ("--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # Demo project\n+more\n"
             f"--- /dev/null\n+++ b/.vscode/tasks.json\n@@ -0,0 +1 @@\n+{folder_open_task(host)}\n")
    script = (f"printf '#!/bin/sh\\n{host.marker_command('shell-hook')}\\n' > .githooks/post-commit && "
              "chmod 755 .githooks/post-commit && "
              f"printf '{local_hook(host)}' > .pre-commit-config.yaml && mkdir -p .vscode && "
              f"echo '{folder_open_task(host)}' > .vscode/tasks.json && rm -f .githooks/pre-commit && "
              "echo built > build.txt && mkdir -p sub/.Cursor && echo '{}' > sub/.Cursor/mcp.json")
    routes: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"path": ".githooks/pre-commit", "content": hook(host), "overwrite": True}),
        ("write_file", {"path": ".githooks/post-checkout", "content": hook(host)}),
        ("write_file", {"path": ".husky/pre-commit", "content": hook(host)}),
        ("write_file", {"path": ".pre-commit-config.yaml", "content": local_hook(host), "overwrite": True}),
        ("edit_file", {"path": ".pre-commit-config.yaml", "old_string": "repos: []\n",
                       "new_string": local_hook(host)}),
        ("set_file_slice", {"path": ".pre-commit-config.yaml", "start_line": 2, "end_line": 2,
                            "new_content": local_hook(host)}),
        ("write_file", {"path": ".vscode/tasks.json", "content": folder_open_task(host)}),
        ("write_file", {"path": ".VSCode/tasks.json", "content": folder_open_task(host)}),
        ("write_file", {"path": "kit/.Vscode/tasks.json", "content": folder_open_task(host)}),
        ("write_file", {"path": ".mcp.json", "content": mcp_server(host)}),
        ("write_file", {"path": ".cursor/mcp.json", "content": mcp_server(host)}),
        ("write_file", {"path": ".vscode/mcp.json", "content": mcp_server(host)}),
        ("write_file", {"path": ".claude/settings.json", "content": "{}"}),
        ("write_file", {"path": ".gitmodules", "content": '[submodule "x"]\n\tpath = x\n\turl = ext::sh -c x\n'}),
        ("write_file", {"path": ".gitattributes", "content": "* filter=planted\n"}),
        ("write_file", {"path": ".devcontainer/devcontainer.json",
                        "content": json.dumps({"postCreateCommand": host.marker_command("devcontainer")})}),
        ("write_file", {"path": ".bashrc", "content": host.marker_command("bashrc")}),
        ("make_directory", {"path": ".husky"}),
        ("move_path", {"source": "tools/check.sh", "destination": ".githooks/pre-push"}),  # into a hooks folder
        ("move_path", {"source": "tools", "destination": ".husky"}),
        ("move_path", {"source": ".pre-commit-config.yaml", "destination": "old-config.yaml"}),  # out of one
        ("move_path", {"source": "kit", "destination": "kit2"}),  # a folder holding one
        ("delete_path", {"path": ".githooks/pre-commit"}),
        ("delete_path", {"path": "kit", "recursive": True}),
        ("apply_patch", {"patch": patch}),
        ("py_move_def", {"src_path": "src/app.py", "dest_path": ".githooks/lib.py", "name": "main"}),
    ]
    approved = ("mkdir -p .husky && printf '#!/bin/sh\\nexit 0 # APPROVE-ME\\n' > .husky/pre-commit && "
                "chmod 755 .husky/pre-commit && echo one > one.txt")
    asked: list[str] = []

    async def person(context: Any, params: Any) -> Any:
        import mcp_types as types

        asked.append(params.message)
        if "APPROVE-ME" in params.message:
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    async with host.serve(elicitation=person, mode="legacy") as session:
        # undo would put back the hook module the person deleted
        assert asks_a_person(await session.call("undo", {}))
        await refused_each(session, routes)
        questions = len(asked)
        assert questions == len(routes) + 1 and all("host runs later" in question for question in asked), asked
        run = await session.call("run_shell", {"script": script}) if bwrap_works() else None
        yes = await session.call("run_shell", {"script": approved}) if bwrap_works() else None
    assert (host.project / "README.md").read_text() == "# Demo project\n"  # the patch was refused whole
    assert (host.project / "src/app.py").read_text().startswith("def main()")
    if run is not None and yes is not None:  # the run's other writes came back; the rest waited for the person
        assert not run.is_error and (host.project / "build.txt").read_text() == "built\n", run.text
        assert "NOT applied, held for a person" in run.text
        for shown in (".githooks (folder)", ".pre-commit-config.yaml (file)", ".vscode (folder)",
                      "sub/.Cursor (folder)"):
            assert shown in run.text and shown.split(" ")[0] in asked[questions], (shown, run.text)
        assert "+++ b/.githooks/post-commit" in asked[questions] and "new file mode 100755" in asked[questions]
        assert not yes.is_error and "applied with a person's approval" in yes.text, yes.text
        assert "new file mode 100755" in asked[-1] and "+++ b/.husky/pre-commit" in asked[-1]
        assert stat.S_IMODE(os.stat(host.project / ".husky/pre-commit").st_mode) == 0o755
        assert (host.project / "one.txt").exists() and len(asked) == questions + 2
        host.approve(".husky")
    # the host's own commit (the person's hooks: pre-commit on an unchanged config) runs nothing planted


async def test_auto_approve_all_does_not_answer_for_a_person(host: Host) -> None:
    scene(host)
    person_configures(host, auto_approve_all(host))
    async with host.serve(gateway=True) as session:  # the client cannot be asked anything
        await refused_each(session, [
            ("write_file", {"path": ".githooks/pre-commit", "content": hook(host), "overwrite": True}),
            ("write_file", {"path": ".pre-commit-config.yaml", "content": local_hook(host), "overwrite": True}),
            ("move_path", {"source": "tools/check.sh", "destination": ".githooks/pre-push"}),
            ("apply_patch", {"patch": f"--- /dev/null\n+++ b/.mcp.json\n@@ -0,0 +1 @@\n+{mcp_server(host)}\n"}),
        ])
        ordinary = await session.call("write_file", {"path": "notes.txt", "content": "approved in advance\n"})
        run = await session.call("run_shell", {"script": "mkdir -p .husky && echo x > .husky/pre-commit && "
                                                          "echo y > made.txt"}) if bwrap_works() else None
    assert not ordinary.is_error and (host.project / "notes.txt").exists()  # the rule still approves the rest
    if run is not None:
        assert "held for a person" in run.text and (host.project / "made.txt").exists(), run.text


def answers(decisions: list[bool], asked: list[str]) -> Callable[[Any, Any], Awaitable[Any]]:
    """An elicitation callback: the person reads the question (kept in ``asked``), then says the next
    of ``decisions``."""
    import mcp_types as types

    async def person(context: Any, params: Any) -> Any:
        asked.append(params.message)
        if decisions.pop(0):
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    return person


async def test_a_person_sees_the_diff_and_only_their_yes_writes(host: Host) -> None:
    scene(host)
    person_configures(host, auto_approve_all(host))
    asked: list[str] = []
    decisions = [False, True, False]
    async with host.serve(gateway=True, elicitation=answers(decisions, asked)) as session:
        task = await session.call("write_file", {"path": ".vscode/tasks.json", "content": folder_open_task(host)})
        pre_push = await session.call("write_file", {"path": ".githooks/pre-push", "content": "#!/bin/sh\nexit 0\n"})
        moved = await session.call("move_path", {"source": "tools/check.sh", "destination": ".githooks/pre-merge"})
    assert task.refused("was not approved") and not (host.project / ".vscode").exists()
    assert "+++ b/.vscode/tasks.json" in asked[0] and "folderOpen" in asked[0] and "VS Code" in asked[0]
    assert not pre_push.is_error, pre_push.text
    assert "+++ b/.githooks/pre-push" in asked[1] and "git hooks folder" in asked[1]
    assert (host.project / ".githooks/pre-push").read_text() == "#!/bin/sh\nexit 0\n"
    assert moved.refused("was not approved") and (host.project / "tools/check.sh").exists()
    assert "new file mode 100755" in asked[2] and "+++ b/.githooks/pre-merge" in asked[2]  # the executable bit
    assert decisions == [] and len(asked) == 3
    host.approve(".githooks/pre-push")
