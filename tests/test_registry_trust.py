"""Signatures as identity: the signing key, trusted keys, what a signature covers, and who may sign.

Through the catalog (the meta-tools), the command line and the workspace gate. The attacks over
real MCP sessions, as root and as a normal user, are in ``tests/redteam/test_registry_attacks.py``.
"""

from __future__ import annotations

import hashlib
import json
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeward.apps.cli import main as cli_main
from codeward.config.registry import RegistrySettings
from codeward.engines.registry.keys import KeyStore, PublicKey, SigningKeyError
from codeward.kernel.catalog import Catalog
from codeward.kernel.context import CallInfo, Services, ToolContext
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.user_dirs import data_home
from codeward.kernel.workspace import Access, Workspace
from tests.conftest import snapshot
from tests.registry_support import person, python_tool, sign, user_space, without_state, write
from tests.sandbox_support import bwrap_works

__all__ = ["person", "user_space"]

Call = Callable[..., ToolOutcome]
needs_sandbox = pytest.mark.skipif(not bwrap_works(), reason="registry tools run in the bwrap sandbox, which "
                                   "cannot create namespaces here")


def test_the_key_is_made_private_on_the_first_signature_and_never_replaced(root: Path, user_space: Path,
                                                                          person: Call) -> None:
    keys = KeyStore(data_home() / "signing")
    assert keys.own() is None
    write(root, ".ai/knowledge/notes.md", "Be kind.\n")
    signed = sign(person, "notes")
    assert f"A signing key was made for you: {keys.private_path}" in signed.text
    assert stat.S_IMODE(keys.folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(keys.private_path.stat().st_mode) == 0o600
    assert keys.private_path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    own = keys.own()
    assert own is not None and own.key_id in signed.text
    with pytest.raises(SigningKeyError, match="never replaces it"):
        keys.create()
    again = sign(person, "notes")
    assert "A signing key was made" not in again.text and own.key_id in again.text

    keys.private_path.chmod(0o644)
    refused = person("registry_execute", name="notes", action="sign")
    assert refused.is_error and "can be read by other users" in refused.text and "chmod 600" in refused.text


def test_legacy_hashes_are_refused_with_a_hint_to_re_sign(root: Path, user_space: Path, call: Call,
                                                          person: Call) -> None:
    body = python_tool()
    digest = hashlib.sha256(body.encode()).hexdigest()
    write(root, ".ai/tools/seeded.py", f"# kiwi-mcp:validated:2026-01-28T12:34:56.123456Z:{digest}\n{body}")
    write(root, ".ai/tools/older.py", f"# codeward:validated:2026-01-28T12:34:56Z:{digest}\n{body}")
    seeded = call("registry_execute", name="seeded", params={"name": "x"})
    assert seeded.is_error and "the seed's unkeyed legacy signature (kiwi-mcp:validated" in seeded.text
    assert "Review the file, then sign it with your key: `codeward sign seeded`" in seeded.text
    older = call("registry_execute", name="older", params={"name": "x"})
    assert older.is_error and "an older codeward's unkeyed legacy signature" in older.text
    assert "legacy" in call("registry_search", query="greet").text
    sign(person, "seeded")
    assert "Hello, x!" in call("registry_execute", name="seeded", params={"name": "x"}).text


@needs_sandbox
def test_a_teammates_signature_counts_once_their_key_is_trusted(root: Path, user_space: Path, call: Call,
                                                                 person: Call, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    teammate = KeyStore(tmp_path / "alice-data" / "signing")
    alice = teammate.create("alice@laptop")
    path = write(root, ".ai/tools/greet.py", python_tool())
    sign(person, "greet")  # signed with our key, then re-signed with Alice's (as if pulled from her)
    data = path.read_bytes()
    from codeward.engines.registry import Registry
    from codeward.engines.registry.trust import sign as sign_covered

    registry = Registry(Workspace.create([root]), Services().get(RegistrySettings))
    item = registry.fresh(registry.find("greet").data).data[0]  # type: ignore[union-attr,arg-type]
    theirs = sign_covered(registry.covered(item, data), data, teammate)
    assert theirs.ok and theirs.data is not None
    path.write_bytes(theirs.data.data)

    untrusted = call("registry_execute", name="greet", params={"name": "x"})
    assert untrusted.is_error and f"signed by key {alice.key_id}, which you do not trust" in untrusted.text
    assert "codeward registry trust add" in untrusted.text
    assert cli_main(["registry", "trust", "add", alice.line(), "--root", str(root)]) == 0
    assert f"Trusted {alice.key_id} (alice@laptop)" in capsys.readouterr().out
    ran = call("registry_execute", name="greet", params={"name": "x"})
    assert not ran.is_error and "Hello, x!" in ran.text
    assert f"valid, by {alice.key_id} (alice@laptop)" in call("registry_help", name="greet").text
    assert cli_main(["registry", "trust", "list", "--root", str(root)]) == 0
    listed = capsys.readouterr().out
    assert "alice@laptop" in listed and "(yours)" in listed
    assert cli_main(["registry", "trust", "remove", "alice@laptop", "--root", str(root)]) == 0
    assert "which you do not trust" in call("registry_execute", name="greet", params={"name": "x"}).text


def test_trust_and_key_commands_refuse_bad_input_clearly(root: Path, user_space: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    r = ("--root", str(root))
    assert cli_main(["registry", "key", *r]) == 1
    assert "You have no signing key yet" in capsys.readouterr().err
    assert cli_main(["registry", "trust", "add", "ssh-ed25519 AAAA", "--name", "bob", *r]) == 1
    assert "not a codeward public key" in capsys.readouterr().err
    assert cli_main(["registry", "trust", "add", "codeward-ed25519 !!!", "--name", "bob", *r]) == 1
    assert "does not decode" in capsys.readouterr().err
    key = PublicKey(b"\x01" * 32)
    assert cli_main(["registry", "trust", "add", key.line(), *r]) == 1
    assert "name the key" in capsys.readouterr().err
    assert cli_main(["registry", "trust", "remove", "nobody", *r]) == 1
    assert "no trusted key has the id or name 'nobody'" in capsys.readouterr().err
    assert cli_main(["registry", "key", "--create", "--name", "me", *r]) == 0
    own = KeyStore(data_home() / "signing").own()
    assert own is not None and own.line() in capsys.readouterr().out
    assert cli_main(["registry", "trust", "remove", own.key_id, *r]) == 1
    assert "is your own signing key" in capsys.readouterr().err
    assert not (data_home() / "signing" / "trusted").exists()


@needs_sandbox
def test_only_the_signed_closure_runs(root: Path, user_space: Path, call: Call, person: Call) -> None:
    write(root, ".ai/tools/lib/shared/__init__.py", "from shared.words import WORD\n")
    write(root, ".ai/tools/lib/shared/words.py", "WORD = 'packaged'\n")
    write(root, ".ai/tools/text/helper.py", "import shared\n\ndef word():\n    return shared.WORD\n")
    write(root, ".ai/tools/text/uses.py", python_tool(body="    import helper\n    return helper.word()"))
    signed = sign(person, "uses")
    for covered in ("file text/uses.py", "file text/helper.py", "file lib/shared/__init__.py",
                    "file lib/shared/words.py"):
        assert covered in signed.text, covered
    assert call("registry_execute", name="uses", params={"name": "x"}).text.startswith("packaged")
    (root / ".ai/tools/lib/shared/words.py").write_text("WORD = 'changed'\n")
    changed = call("registry_execute", name="uses", params={"name": "x"})
    assert changed.is_error and "lib/shared/words.py" in changed.text
    (root / ".ai/tools/lib/shared/words.py").write_text("WORD = 'packaged'\n")
    assert not call("registry_execute", name="uses", params={"name": "x"}).is_error
    write(root, ".ai/tools/text/relative.py", python_tool(body="    from . import helper"))
    relative = person("registry_execute", name="relative", action="sign")
    assert relative.is_error and "a relative import outside a package" in relative.text


def test_signing_asks_the_person_and_a_no_changes_nothing(root: Path, user_space: Path, catalog: Catalog,
                                                          ctx: ToolContext) -> None:
    write(root, ".ai/tools/greet.py", python_tool())
    questions: list[str] = []

    class Client:
        def __init__(self, answer: dict[str, Any] | Exception) -> None:
            self.answer = answer

        def sample(self, prompt: str, max_tokens: int = 256) -> str:
            raise NotImplementedError

        def elicit(self, message: str, schema: dict[str, Any]) -> dict[str, Any]:
            questions.append(message)
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    before = snapshot(root)
    for answer in ({"action": "decline"}, {"action": "accept", "content": {"approve": False}},
                   RuntimeError("the client does not support elicitation")):
        refused = catalog.call("registry_execute", {"name": "greet", "action": "sign"}, ctx.child(peer=Client(answer)))
        assert refused.is_error and "signing greet" in refused.text and "codeward sign greet" in refused.text
    assert without_state(snapshot(root)) == without_state(before)
    assert "sign tool greet (.ai/tools/greet.py) with a new key made for you now" in questions[0]
    assert "file greet.py" in questions[0] and "executor chain greet → python_runtime → subprocess" in questions[0]
    yes = catalog.call("registry_execute", {"name": "greet", "action": "sign"},
                       ctx.child(peer=Client({"action": "accept", "content": {"approve": True}})))
    assert not yes.is_error, yes.text
    assert (root / ".ai/tools/greet.py").read_text().startswith("# codeward:signed:v1:")


def test_codeward_s_data_folder_is_off_limits_even_inside_a_root(tmp_path: Path, user_space: Path,
                                                                 call: Call, person: Call) -> None:
    write(tmp_path / "home", ".ai/knowledge/notes.md", "Be kind.\n")
    sign(person, "notes")
    home = tmp_path / "home"
    workspace = Workspace.create([home])  # a client that serves the whole home folder
    keys = data_home() / "signing"
    for path in (keys / "ed25519.pem", keys / "ed25519.pub", keys / "trusted" / "x.pub"):
        for access in (Access.READ, Access.WRITE):
            refused = workspace.resolve(str(path), access)
            assert not refused.ok and "codeward's per-user data" in refused.error_text(), (path, access)
    assert not workspace.visible(data_home())
    from codeward.engines.contained.confine import confine

    assert str(data_home().resolve()) in confine(workspace, hide_secrets=False).hidden


@needs_sandbox
def test_a_tool_declares_its_variables_and_network(root: Path, user_space: Path, call: Call, person: Call,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOL_TOKEN", "for-the-tool")
    write(root, ".ai/tools/undeclared.py", python_tool(header='CONFIG = {"env": {"TOKEN": "${TOOL_TOKEN}"}}'))
    refused = person("registry_execute", name="undeclared", action="sign")
    assert refused.is_error and "uses ${TOOL_TOKEN}, which the item does not declare" in refused.text
    assert '__env__ = ["TOOL_TOKEN"]' in refused.text
    write(root, ".ai/tools/badhost.py", python_tool(header='__network__ = ["https://api.example.com/x"]'))
    bad = person("registry_execute", name="badhost", action="sign")
    assert bad.is_error and "__network__: must be a list of host names" in bad.text
    body = "    import os, socket\n    try:\n        socket.getaddrinfo('example.com', 443)\n        net = 'dns'\n" \
           "    except OSError as exc:\n        net = type(exc).__name__\n" \
           "    return {'token': os.environ.get('TOKEN'), 'net': net}"
    write(root, ".ai/tools/declared.py", python_tool(body=body, header='__env__ = ["TOOL_TOKEN"]\n'
                                                     '__network__ = ["example.com"]\n'
                                                     'CONFIG = {"env": {"TOKEN": "${TOOL_TOKEN}"}}'))
    sign(person, "declared")
    planned = call("registry_execute", name="declared", params={"name": "x"}, dry_run=True)
    assert "network: none (declared but not allowed by the operator: example.com)" in planned.text
    assert "variables: TOOL_TOKEN" in planned.text
    ran = call("registry_execute", name="declared", params={"name": "x"})
    assert not ran.is_error, ran.text
    result = json.loads(ran.text.split("\n[declared ran")[0])
    assert result["token"] == "for-the-tool" and result["net"] != "dns"
    assert "which the operator does not allow ([registry] allow_hosts" in ran.text


def test_signing_for_a_model_needs_a_person_even_when_the_call_is_direct(root: Path, user_space: Path,
                                                                         catalog: Catalog, ctx: ToolContext) -> None:
    write(root, ".ai/tools/greet.py", python_tool())
    alone = catalog.call("registry_execute", {"name": "greet", "action": "sign"}, ctx)
    assert alone.is_error and "needs a person's approval, and nobody can be asked" in alone.text
    typed = catalog.call("registry_execute", {"name": "greet", "action": "sign"},
                         ctx.child(call=CallInfo(approved=True)))
    assert not typed.is_error
