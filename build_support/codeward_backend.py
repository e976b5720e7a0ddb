"""codeward's build backend: setuptools', plus one build profile for the pre-commit hook.

pre-commit installs a hook's repository with ``pip install . <additional_dependencies>``: it cannot ask for an
extra, so a hook of a full toolkit installs the whole toolkit (about 90 packages) to run a review. The hook's
manifest passes ``--config-settings=codeward-profile=review``; with it this backend builds codeward whose
dependencies are the ``review`` extra's alone (the analyzers and what ``codeward review`` imports), from a copy
of the tree whose ``pyproject.toml`` says so. Without it the build is setuptools' own, unchanged.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (the hooks this backend does not change)
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
)

SETTING = "codeward-profile"
PROFILES = ("full", "review")
_COPIED = ("pyproject.toml", "README.md", "src")
_DEPENDENCIES = re.compile(r"^dependencies = \[\n.*?^\]\n", re.M | re.S)


def _profile(config_settings: Mapping[str, Any] | None) -> str:
    profile = str((config_settings or {}).get(SETTING, "full"))
    if profile not in PROFILES:
        raise ValueError(f"--config-settings={SETTING}={profile}: unknown profile; choose one of {', '.join(PROFILES)}")
    return profile


def _others(config_settings: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The settings meant for setuptools (ours taken out)."""
    rest = {key: value for key, value in (config_settings or {}).items() if key != SETTING}
    return rest or None


def review_pyproject(text: str) -> str:
    """``pyproject.toml`` with ``[project] dependencies`` replaced by the ``review`` extra."""
    review = tomllib.loads(text)["project"]["optional-dependencies"]["review"]
    listed = "dependencies = [\n" + "".join(f"  {json.dumps(req)},\n" for req in review) + "]\n"
    replaced, count = _DEPENDENCIES.subn(lambda _match: listed, text, count=1)
    if count != 1:
        raise ValueError("pyproject.toml: no `dependencies = [` block under [project] to replace")
    return replaced


@contextmanager
def _built_in(config_settings: Mapping[str, Any] | None) -> Iterator[None]:
    """Run a hook in this tree (the full profile) or in a copy of it with the review profile's dependencies."""
    if _profile(config_settings) == "full":
        yield
        return
    here = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="codeward-review-build-") as scratch:
        tree = Path(scratch)
        for name in _COPIED:
            source = here / name
            if source.is_dir():
                shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
            else:
                shutil.copy2(source, tree / name)
        (tree / "pyproject.toml").write_text(review_pyproject((here / "pyproject.toml").read_text(encoding="utf-8")),
                                             encoding="utf-8")
        os.chdir(tree)
        try:
            yield
        finally:
            os.chdir(here)


def get_requires_for_build_wheel(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    _profile(config_settings)
    return list(_setuptools.get_requires_for_build_wheel(_others(config_settings)))


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Mapping[str, Any] | None = None) -> str:
    with _built_in(config_settings):
        return str(_setuptools.prepare_metadata_for_build_wheel(metadata_directory, _others(config_settings)))


def build_wheel(wheel_directory: str, config_settings: Mapping[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    with _built_in(config_settings):
        # A metadata folder prepared in another tree is still right: it was made by the same profile.
        return str(_setuptools.build_wheel(wheel_directory, _others(config_settings), metadata_directory))
