"""The one list of secrets: the names (and key headers) the file tools refuse are the files the
shell sandbox hides (:func:`codeward.kernel.workspace.secret_paths`)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.workspace import Workspace, private_key_marker, secret_paths

Call = Callable[..., ToolOutcome]

SECRET_FILES = [".envrc", "prod.env", "config/staging.env", ".npmrc", ".pypirc", ".netrc", ".git-credentials",
                ".aws/credentials", "certs/client.p12", "certs/client.PFX", "putty.ppk", "terraform.tfstate",
                "infra/terraform.tfstate.backup", "infra/prod.tfstate", "kubeconfig", "ops/dev.kubeconfig",
                ".kube/config", "home/.kube/config", ".docker/config.json", "home/.docker/config.json",
                "tls/server.KEY", "id_ed25519", ".env", ".env.local"]
KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
READABLE = ["src/env.py", "docs/credentials.md", "config.json", "docker/config.yaml", "kube/config", "README.md"]


@pytest.fixture
def project(root: Path) -> Path:
    for name in SECRET_FILES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"SECRET in {name}\n")
    for name in READABLE:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("fine\n")
    (root / "deploy").mkdir()
    (root / "deploy" / "ci-bot").write_bytes(KEY)
    (root / "deploy" / "rsa-server").write_bytes(b"\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n")
    (root / "docs" / "keys.md").write_text("A key file begins with:\n\n    -----BEGIN OPENSSH PRIVATE KEY-----\n")
    (root / ".git").mkdir()
    (root / ".git" / ".env").write_text("SECRET in .git/.env\n")
    return root


@pytest.mark.parametrize("name", SECRET_FILES)
def test_every_secret_name_is_refused(project: Path, call: Call, name: str) -> None:
    outcome = call("read_file", path=name)
    assert outcome.is_error and outcome.errors[0].kind.value == "permission", outcome.text
    assert "SECRET" not in outcome.text


def test_private_keys_are_refused_by_content_whatever_their_name(project: Path, call: Call) -> None:
    for name in ("deploy/ci-bot", "deploy/rsa-server"):
        outcome = call("read_file", path=name)
        assert outcome.is_error and "private key" in outcome.text, outcome.text
        assert "b3Bl" not in outcome.text and "MIIE" not in outcome.text
    edited = call("edit_file", path="deploy/ci-bot", old_string="b3Bl", new_string="x")
    assert edited.is_error and (project / "deploy" / "ci-bot").read_bytes() == KEY
    quoted = call("read_file", path="docs/keys.md")
    assert not quoted.is_error and "BEGIN OPENSSH" in quoted.text  # a key header quoted in the text is fine


@pytest.mark.parametrize("name", READABLE)
def test_look_alikes_stay_readable(project: Path, call: Call, name: str) -> None:
    assert call("read_file", path=name).text == "fine\n"


def test_secret_paths_finds_what_the_file_tools_refuse(project: Path) -> None:
    """The shell hides this list: .git/.env and server.KEY included, keys found by their header."""
    found, complete = secret_paths(Workspace.create([project]))
    shown = {str(path.relative_to(project)) for path in found}
    expected = {name for name in SECRET_FILES if not name.startswith(".aws/")} | {".aws/credentials"}
    assert complete
    assert expected | {".git/.env", "deploy/ci-bot", "deploy/rsa-server"} == shown
    assert private_key_marker(KEY) == "BEGIN OPENSSH PRIVATE KEY"
    assert private_key_marker(b"\xef\xbb\xbf  -----BEGIN PRIVATE KEY-----") == "BEGIN PRIVATE KEY"
    assert private_key_marker(b"text\n-----BEGIN PRIVATE KEY-----") == ""


def test_a_committed_key_under_an_innocent_name_is_withheld_from_diffs(root: Path, call: Call) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                       capture_output=True)

    git("init", "-q")
    (root / "app.py").write_text("x = 1\n")
    (root / "bot").write_bytes(KEY)
    git("add", "-A")
    git("commit", "-qm", "x")
    outcome = call("get_git_diff", path=".", base_rev="4b825dc642cb6eb9a060e54bf8d69288fbee4904")
    assert not outcome.is_error and "app.py" in outcome.text
    assert "b3Bl" not in outcome.text and "a/bot" not in outcome.text
    assert "1 protected file(s) left out" in outcome.text
