"""``codeward review`` as a pre-commit hook, run by the real pre-commit from PyPI.

A temporary repository declares codeward's ``.pre-commit-hooks.yaml`` the way users do
(``repo:`` + ``rev:``); pre-commit builds the hook's own environment (``pip install`` of
codeward, built with its ``review`` extra's dependencies only) and runs it on the files of a commit: a
file with a type error fails the commit with ruff-style lines and the gate that failed, a clean one
passes; the environment holds the review's packages and none of the toolkit's others.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from codeward.engines.review.analyzers import EXTENSIONS
from tests.conftest import REPO

PRE_COMMIT = Path(sys.executable).parent / "pre-commit"
GIT = ["git", "-c", "user.name=codeward tests", "-c", "user.email=tests@codeward.invalid", "-c",
       "init.defaultBranch=main"]
HOOK_REPO_FILES = ("src", "build_support", "pyproject.toml", "README.md", "MANIFEST.in", ".pre-commit-hooks.yaml")
"""What `pip install .` of codeward needs, plus the hook manifest."""
NOT_FOR_REVIEW = ("mcp", "openai", "lxml", "tree-sitter-language-pack", "uvicorn", "starlette", "docker", "redis",
                  "cryptography", "jedi", "pygls", "prompt-toolkit")
"""Dependencies of the toolkit a review does not import: the hook's environment has none of them."""


def _manifest() -> list[dict[str, object]]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(hooks, list)
    return hooks


def test_the_hook_selects_exactly_the_files_codeward_reviews() -> None:
    [hook] = _manifest()
    assert hook["id"] == "codeward-review" and hook["language"] == "python" and hook["require_serial"] is True
    pattern = re.compile(str(hook["files"]))
    for suffix in EXTENSIONS:
        assert pattern.search(f"dir/name{suffix}"), suffix
    for other in (".md", ".txt", ".json", ".toml", ".pyc", ".shx"):
        assert not pattern.search(f"dir/name{other}"), other


def _hook_repository(tmp_path: Path) -> tuple[Path, str]:
    """A git repository holding codeward as it is in this working tree, at one commit."""
    hook_repo = tmp_path / "codeward-hooks"
    hook_repo.mkdir()
    for name in HOOK_REPO_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, hook_repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, hook_repo / name)
    subprocess.run([*GIT, "init", "-q"], cwd=hook_repo, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=hook_repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "codeward"], cwd=hook_repo, check=True)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hook_repo, capture_output=True, text=True,
                         check=True).stdout.strip()
    return hook_repo, rev


@pytest.mark.slow
@pytest.mark.skipif(not PRE_COMMIT.exists(), reason="pre-commit is not installed (the test extra)")
def test_codeward_review_runs_as_a_pre_commit_hook(tmp_path: Path) -> None:
    hook_repo, rev = _hook_repository(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / "bad.py").write_text('import os\n\ncount: int = "three"\n')
    (project / "good.py").write_text('"""Fine."""\n\n\ndef double(value: int) -> int:\n    return 2 * value\n')
    (project / "notes.md").write_text("# not reviewed\n")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: codeward-review\n")
    subprocess.run([*GIT, "init", "-q"], cwd=project, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=project, check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PRE_COMMIT_COLOR": "never",
           "PIP_NO_COMPILE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

    def hook(*files: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(PRE_COMMIT), "run", "--files", *files], cwd=project, env=env,
                              capture_output=True, text=True, timeout=1500)

    failing = hook("bad.py", "notes.md")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert re.search(r"codeward review\.+Failed", failing.stdout)
    assert "bad.py:1:8: F401 [ruff] warning: `os` imported but unused" in failing.stdout
    assert "bad.py:3:14: assignment [mypy] error" in failing.stdout, failing.stdout
    assert "FAIL max_errors: actual 1, threshold 0 (default)" in failing.stdout
    assert "notes.md" not in failing.stdout
    passing = hook("good.py")
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert re.search(r"codeward review\.+Passed", passing.stdout)

    [hook_python] = (tmp_path / "pre-commit-home").glob("repo*/py_env-*/bin/python")
    listed = subprocess.run([str(hook_python), "-c", "import importlib.metadata as m, json\n"
                             "print(json.dumps({'names': sorted(d.metadata['Name'].lower() for d in m.distributions()),"
                             " 'requires': m.requires('codeward')}))"], capture_output=True, text=True, check=True)
    environment = json.loads(listed.stdout)
    review_extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["review"]
    base = sorted(str(Requirement(r)) for r in environment["requires"] if "extra ==" not in r)
    assert base == sorted(str(Requirement(r)) for r in review_extra)  # codeward's dependencies there: the extra's
    assert {"ruff", "mypy", "bandit", "vulture"} <= set(environment["names"])
    assert not set(NOT_FOR_REVIEW) & set(environment["names"]), set(NOT_FOR_REVIEW) & set(environment["names"])
