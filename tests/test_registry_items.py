"""Registry items through the meta-tools: metadata without imports, validation, signatures, chains,
the BM25 index, and copying between the project and user spaces."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.apps.cli import main as cli_main
from codeward.config.registry import RegistrySettings
from codeward.engines.registry import Registry
from codeward.kernel.context import Services
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace
from tests.conftest import snapshot
from tests.registry_support import person, python_tool, runtime, sign, user_space, without_state, write

__all__ = ["person", "user_space"]

Call = Callable[..., ToolOutcome]


def test_new_scaffolds_valid_items_of_each_kind(root: Path, user_space: Path, person: Call,
                                                capsys: object) -> None:
    assert cli_main(["registry", "new", "greet", "--root", str(root)]) == 0
    assert cli_main(["registry", "new", "fetch_item", "--type", "api", "--category", "web", "--root", str(root)]) == 0
    assert cli_main(["registry", "new", "review_steps", "--kind", "directive", "--root", str(root)]) == 0
    assert cli_main(["registry", "new", "style_notes", "--kind", "knowledge", "--user", "--root", str(root)]) == 0
    assert (root / ".ai/tools/utility/greet.py").is_file()
    assert (root / ".ai/tools/web/fetch_item.py").is_file()
    assert (root / ".ai/directives/review_steps.md").is_file()
    assert (user_space / "knowledge/style_notes.md").is_file()
    for name in ("greet", "fetch_item", "review_steps", "style_notes"):
        signed = sign(person, name)
        assert "codeward:signed:v1:" in signed.text
    assert (root / ".ai/tools/utility/greet.py").read_text().startswith("# codeward:signed:v1:")
    assert (user_space / "knowledge/style_notes.md").read_text().startswith("<!-- codeward:signed:v1:")
    before = snapshot(root)
    assert cli_main(["registry", "new", "greet", "--root", str(root)]) == 1
    assert cli_main(["registry", "new", "bad name", "--root", str(root)]) == 1
    assert cli_main(["registry", "new", "subprocess", "--root", str(root)]) == 1
    assert without_state(snapshot(root)) == without_state(before)


def test_metadata_is_read_without_running_the_file(root: Path, user_space: Path, call: Call, person: Call) -> None:
    marker = root / "imported.txt"
    header = f"open({str(marker)!r}, 'w').write('ran')"
    write(root, ".ai/tools/side_effect.py", python_tool(header=header))
    assert not call("registry_help", name="side_effect").is_error
    assert "side_effect" in call("registry_search", query="greet").text
    sign(person, "side_effect")
    assert not marker.exists()


def test_validation_names_file_field_and_fix_and_signing_refuses(root: Path, user_space: Path, call: Call,
                                                                 person: Call) -> None:
    text = python_tool(version="one", tool_type="script", executor=None, category="", body="    pass") \
        .replace("def main(name):", "def helper(name):")
    path = write(root, ".ai/tools/broken.py", text + "CONFIG = make_config()\n")
    before = snapshot(root)
    refused = person("registry_execute", name="broken", action="sign")
    assert refused.is_error and "was not signed" in refused.text
    for expected in (".ai/tools/broken.py: __version__: 'one' is not a semantic version",
                     "__tool_type__: 'script' is not a tool type", "Fix: use one of python, api, mcp_tool",
                     "__category__", "CONFIG: assigned an expression at line", "Fix:"):
        assert expected in refused.text, expected
    assert without_state(snapshot(root)) == without_state(before)
    helped = call("registry_help", name="broken")
    assert "Problems:" in helped.text and "semantic version" in helped.text
    assert "invalid" in call("registry_search", query="greet").text
    path.write_text("def main(:\n")
    syntax = person("registry_execute", name="broken", action="sign")
    assert syntax.is_error and "not valid Python (line 1" in syntax.text


def test_unsigned_and_tampered_tools_do_not_run(root: Path, user_space: Path, call: Call, person: Call) -> None:
    path = write(root, ".ai/tools/greet.py", python_tool())
    before = snapshot(root)
    unsigned = call("registry_execute", name="greet", params={"name": "Ada"})
    assert unsigned.is_error and "greet is not signed, so it does not run" in unsigned.text
    assert "codeward sign greet" in unsigned.text
    assert without_state(snapshot(root)) == without_state(before)

    sign(person, "greet")
    assert "Hello, Ada!" in call("registry_execute", name="greet", params={"name": "Ada"}).text
    data = path.read_bytes()
    path.write_bytes(data.replace(b"Hello, ", b"Hallo, "))
    before = snapshot(root)
    tampered = call("registry_execute", name="greet", params={"name": "Ada"})
    assert tampered.is_error and "greet does not match the signature" in tampered.text
    assert "re-sign it: `codeward sign greet`" in tampered.text
    assert without_state(snapshot(root)) == without_state(before)
    assert "NOT VALID" in call("registry_help", name="greet").text

    sign(person, "greet")
    assert "Hallo, Ada!" in call("registry_execute", name="greet", params={"name": "Ada"}).text
    assert "Signature: valid, by" in call("registry_help", name="greet").text


def test_broken_chains_are_refused_when_signing(root: Path, user_space: Path, call: Call, person: Call) -> None:
    write(root, ".ai/tools/runtimes/ring_a.py", runtime("ring_a", "ring_b"))
    write(root, ".ai/tools/runtimes/ring_b.py", runtime("ring_b", "ring_a"))
    write(root, ".ai/tools/looped.py", python_tool(executor="ring_a"))
    write(root, ".ai/tools/orphan.py", python_tool(executor="no_such_runtime"))
    write(root, ".ai/tools/misrouted.py", python_tool(executor="http_client"))
    before = snapshot(root)
    loop = person("registry_execute", name="looped", action="sign")
    assert loop.is_error and "the executor chain loops: looped → ring_a → ring_b → ring_a" in loop.text
    missing = person("registry_execute", name="orphan", action="sign")
    assert missing.is_error and "'no_such_runtime', which does not exist" in missing.text
    assert "python_runtime" in missing.text
    wrong = person("registry_execute", name="misrouted", action="sign")
    assert wrong.is_error and "python tools run on subprocess" in wrong.text
    assert without_state(snapshot(root)) == without_state(before)
    sign(person, "ring_a")  # a runtime can be signed (its own file), but is not run
    as_tool = call("registry_execute", name="ring_a")
    assert as_tool.is_error and "is a runtime" in as_tool.text
    assert "broken chain" in call("registry_help", name="looped").text


def test_the_signature_covers_the_executor_chain(root: Path, user_space: Path, call: Call, person: Call) -> None:
    runtime_file = write(root, ".ai/tools/runtimes/py_env.py", runtime("py_env", "subprocess", '{"timeout": 5}'))
    write(root, ".ai/tools/greet.py", python_tool(executor="py_env"))
    signed = sign(person, "greet")
    assert "executor chain greet → py_env → subprocess" in signed.text
    ran = call("registry_execute", name="greet", params={"name": "x"})
    assert not ran.is_error and "greet → py_env → subprocess" in ran.text
    runtime_file.write_text(runtime("py_env", "subprocess", '{"timeout": 5, "env": {"EXTRA": "1"}}'))
    changed = call("registry_execute", name="greet", params={"name": "x"})
    assert changed.is_error and "greet does not match the signature" in changed.text
    assert "chain greet → py_env → subprocess" in changed.text


def test_search_ranks_with_bm25_and_follows_file_changes(root: Path, user_space: Path, call: Call) -> None:
    write(root, ".ai/tools/text/word_count.py", python_tool(description="Count the words of a text."))
    write(root, ".ai/tools/text/slugify_title.py", python_tool(description="Turn a title into a URL slug."))
    write(root, ".ai/tools/net/ping_host.py", python_tool(description="Check that a host answers.", category="net"))
    write(root, ".ai/knowledge/words.md", "---\ndescription: Style guide for word choice\n---\nPrefer short words.\n")
    found = call("registry_search", query="count words").text.splitlines()
    assert found[1].startswith("- word_count [tool, project, utility, v1.0.0, unsigned]")
    assert "words [knowledge, project]" in found[2]
    only_tools = call("registry_search", query="words", kind="tool").text
    assert "word_count" in only_tools and "[knowledge" not in only_tools
    assert "ping_host" in call("registry_search", query="net").text  # category

    registry = Registry(Workspace.create([root]), Services().get(RegistrySettings))
    with registry.index() as index:
        assert index.refresh(registry.spaces.files()) == 0  # nothing changed since the last search
    slug = root / ".ai/tools/text/slugify_title.py"
    slug.write_text(python_tool(description="Turn a headline into a hyphenated identifier."))
    os.utime(slug, ns=(slug.stat().st_atime_ns, slug.stat().st_mtime_ns + 1_000_000))
    (root / ".ai/tools/net/ping_host.py").unlink()
    with registry.index() as index:
        assert index.refresh(registry.spaces.files()) == 0  # index() already caught up
        names = index.names()
    assert "ping_host" not in names
    assert "slugify_title" in call("registry_search", query="hyphenated headline").text
    assert "nothing in" in call("registry_search", query="ping").text


def test_project_shadows_user_and_load_copies_between_spaces(root: Path, user_space: Path, call: Call,
                                                           person: Call) -> None:
    write(user_space, "tools/shared/greet.py", python_tool(description="The user's greeting."))
    write(root, ".ai/tools/greet.py", python_tool(description="The project's greeting."))
    sign(person, "greet")  # the project one
    assert "The project's greeting." in call("registry_help", name="greet").text
    user_copy = call("registry_load", name="greet", source="user")
    assert "The user's greeting." in user_copy.text and "tool greet (user: " in user_copy.text

    (root / ".ai/tools/greet.py").unlink()
    assert "The user's greeting." in call("registry_help", name="greet").text
    sign(person, "greet")  # now the user one
    copied = call("registry_load", name="greet", destination="project")
    assert not copied.is_error and "Copied to .ai/tools/shared/greet.py" in copied.text
    project_file = root / ".ai/tools/shared/greet.py"
    assert project_file.read_bytes() == (user_space / "tools/shared/greet.py").read_bytes()
    ran = call("registry_execute", name="greet", params={"name": "Lin"})  # the copy keeps a valid signature
    assert not ran.is_error and "Hello, Lin!" in ran.text

    project_file.write_text(python_tool(description="Edited in the project."))
    before = snapshot(root)
    conflict = call("registry_load", name="greet", source="user", destination="project")
    assert conflict.is_error and "already exists with other content" in conflict.text and "overwrite" in conflict.text
    assert without_state(snapshot(root)) == without_state(before)
    replaced = call("registry_load", name="greet", source="user", destination="project", overwrite=True)
    assert not replaced.is_error
    assert project_file.read_bytes() == (user_space / "tools/shared/greet.py").read_bytes()

    write(root, ".ai/knowledge/team.md", "---\ndescription: Team conventions\n---\nUse pytest.\n")
    unsigned = call("registry_load", name="team", destination="user")
    assert unsigned.is_error and "was not copied to the user space" in unsigned.text
    assert not (user_space / "knowledge/team.md").exists()
    sign(person, "team")
    shared = call("registry_load", name="team", destination="user")
    assert not shared.is_error and (user_space / "knowledge/team.md").read_text().endswith("Use pytest.\n")


def test_bad_inputs_get_clear_errors_and_change_nothing(root: Path, user_space: Path, call: Call,
                                                       person: Call) -> None:
    write(root, ".ai/tools/greet.py", python_tool(
        schema='{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}'))
    sign(person, "greet")
    before = snapshot(root)
    unknown = call("registry_execute", name="gret", params={})
    assert unknown.is_error and "no tool named 'gret'" in unknown.text and "greet" in unknown.text
    wrong = call("registry_execute", name="greet", params={"name": 3})
    assert wrong.is_error and "invalid params for greet: name: 3 is not of type 'string'" in wrong.text
    missing = call("registry_execute", name="greet", params={})
    assert missing.is_error and "'name' is a required property" in missing.text
    not_object = call("registry_execute", name="greet", params=[1, 2])
    assert not_object.is_error and "params" in not_object.text
    bad_action = call("registry_execute", name="greet", action="delete")
    assert bad_action.is_error and "action" in bad_action.text
    no_timeout = call("registry_execute", name="greet", params={"name": "x"}, timeout=-1)
    assert no_timeout.is_error and "timeout" in no_timeout.text
    assert call("registry_load", name="").is_error
    assert "no item named 'nothing'" in call("registry_load", name="nothing").text
    assert call("registry_help", name="nothing").is_error
    assert call("registry_search", query="x", limit=0).is_error
    assert without_state(snapshot(root)) == without_state(before)


def test_links_out_of_the_project_are_not_items(root: Path, user_space: Path, tmp_path: Path, call: Call,
                                                person: Call) -> None:
    outside = write(tmp_path / "elsewhere", "evil.py", python_tool(description="Outside the project."))
    (root / ".ai" / "tools").mkdir(parents=True)
    (root / ".ai" / "tools" / "evil.py").symlink_to(outside)
    (root / ".ai" / "knowledge").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert "nothing in" in call("registry_search", query="outside").text
    assert person("registry_execute", name="evil", action="sign").is_error
    assert not outside.read_text().startswith("# codeward")


def test_publish_to_and_pull_from_a_shared_hub(root: Path, user_space: Path, tmp_path: Path, call: Call,
                                               person: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, ".ai/tools/greet.py", python_tool())
    refused = call("registry_load", name="greet", destination="hub")
    assert refused.is_error and "no registry hub is configured" in refused.text
    hub = tmp_path / "team-hub"
    hub.mkdir()
    monkeypatch.setenv("CODEWARD_REGISTRY_HUB", str(hub))
    unsigned = call("registry_load", name="greet", destination="hub")
    assert unsigned.is_error and "greet was not published, because its signature does not hold" in unsigned.text
    sign(person, "greet")
    published = call("registry_load", name="greet", destination="hub")
    assert not published.is_error and "Copied to hub:tools/greet.py" in published.text
    assert (hub / "tools/greet.py").read_bytes() == (root / ".ai/tools/greet.py").read_bytes()
    assert "greet [tool, hub" in call("registry_search", query="greet", source="hub").text

    (root / ".ai/tools/greet.py").write_text(python_tool(body="    return 'hi ' + name"))
    sign(person, "greet")
    before = snapshot(hub)
    same_version = call("registry_load", name="greet", destination="hub")
    assert same_version.is_error and "the hub already has greet 1.0.0 with other content" in same_version.text
    assert "Bump __version__" in same_version.text and snapshot(hub) == before
    (root / ".ai/tools/greet.py").write_text(python_tool(body="    return 'hi ' + name", version="1.1.0"))
    sign(person, "greet")
    assert not call("registry_load", name="greet", destination="hub").is_error
    assert '__version__ = "1.1.0"' in (hub / "tools/greet.py").read_text()

    (root / ".ai/tools/greet.py").unlink()
    direct = call("registry_execute", name="greet", params={"name": "x"})
    assert direct.is_error and "hub items do not run there" in direct.text and "Pull it" in direct.text
    assert cli_main(["registry", "pull", "greet", "--root", str(root)]) == 0
    pulled = root / ".ai/tools/greet.py"
    assert pulled.read_text().startswith("# codeward:signed:v1:")  # the publisher's signature travels with it
    assert "hi x" in call("registry_execute", name="greet", params={"name": "x"}).text


def test_a_project_without_ai_folder_gets_no_files(root: Path, user_space: Path, call: Call) -> None:
    write(user_space, "knowledge/tips.md", "Quote your variables.\n")
    (root / "main.py").write_text("print('hi')\n")
    before = snapshot(root)
    assert "tips [knowledge, user]" in call("registry_search", query="").text
    assert "Registry items: 1 knowledge (user)" in call("registry_help").text
    assert snapshot(root) == before and not (root / ".codeward").exists()
