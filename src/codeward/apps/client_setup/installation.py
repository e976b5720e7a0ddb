"""How this codeward was installed, and so the command that adds an extra to it.

codeward is installed from its wheel, not from the package index, so ``pip install
'codeward[fast]'`` cannot work for anyone; what does work depends on the installation: ``pipx
inject`` for pipx's environment, ``uv pip install --python`` for a ``uv tool`` one, ``--with`` on
the ``uvx`` command line, ``pip install -e '<clone>[extra]'`` for a clone, and this interpreter's
``pip`` for any other virtual environment. The extra's packages are read from codeward's own
metadata, so a hint never drifts from ``pyproject.toml``.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from codeward.apps.client_setup.launch import ephemeral_environment


@dataclass(frozen=True)
class Installation:
    """Where codeward runs from: ``pipx``, ``uv-tool``, ``uvx``, ``clone``, ``venv`` or ``system``."""

    kind: str
    prefix: Path
    python: str
    clone: Path | None = None
    """The source folder of an editable install."""

    def add_extra(self, extra: str) -> str:
        """The command that installs ``extra``'s packages into this installation."""
        if self.kind == "clone" and self.clone is not None:
            return f"{shlex.quote(self.python)} -m pip install -e {shlex.quote(f'{self.clone}[{extra}]')}"
        packages = extra_requirements(extra)
        quoted = " ".join(shlex.quote(p) for p in packages)
        if self.kind == "pipx":
            return f"pipx inject {shlex.quote(self.prefix.name)} {quoted}"
        if self.kind == "uv-tool":
            return f"uv pip install --python {shlex.quote(self.python)} {quoted}"
        if self.kind == "uvx":
            return "add " + " ".join(f"--with {shlex.quote(p)}" for p in packages) + " to the uvx command"
        if self.kind == "venv":
            return f"{shlex.quote(self.python)} -m pip install {quoted}"
        return f"pipx install --force '<codeward wheel>[{extra}]' (or {shlex.quote(self.python)} -m pip install " \
               f"{quoted})"


def current_installation() -> Installation:
    """This process's installation of codeward."""
    prefix = Path(sys.prefix)
    python = sys.executable
    clone = _editable_source()
    if clone is not None:
        return Installation("clone", prefix, python, clone)
    if (prefix / "pipx_metadata.json").is_file():
        return Installation("pipx", prefix, python)
    if (prefix / "uv-receipt.toml").is_file():
        return Installation("uv-tool", prefix, python)
    if ephemeral_environment(str(prefix)):
        return Installation("uvx", prefix, python)
    if sys.prefix != sys.base_prefix:
        return Installation("venv", prefix, python)
    return Installation("system", prefix, python)


def extra_requirements(extra: str) -> list[str]:
    """``extra``'s requirements as codeward's metadata lists them (markers other than the extra dropped)."""
    try:
        requires = metadata.requires("codeward") or []
    except metadata.PackageNotFoundError:
        return []
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    return [requirement.split(";", 1)[0].strip() for requirement in requires
            if ";" in requirement and marker.search(requirement.split(";", 1)[1])]


def _editable_source() -> Path | None:
    """The clone an editable install points at (PEP 610 ``direct_url.json``), else None."""
    try:
        text = metadata.distribution("codeward").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        info = json.loads(text)
    except json.JSONDecodeError:
        return None
    url = info.get("url", "")
    if info.get("dir_info", {}).get("editable") and url.startswith("file://"):
        return Path(url.removeprefix("file://"))
    return None
