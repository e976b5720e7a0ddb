"""The reviewed project's own analyzer configuration, found as the analyzers would and made safe.

A review agrees with ``ruff check`` and ``mypy`` only if it reads what the project
configured: its rule selection, per-file ignores, strictness. So, unless the review is
*isolated*, codeward looks upward from the reviewed files (never above the workspace root)
for the files each analyzer reads: ``pyproject.toml``/``ruff.toml``/``.ruff.toml`` (ruff
finds them itself), ``mypy.ini``/``.mypy.ini``/``pyproject.toml``/``setup.cfg`` (mypy),
``[tool.bandit]`` or ``.bandit`` (bandit) and ``[tool.vulture]`` (vulture).

A configuration file is written by whoever can write the project, which may be an agent.
Nothing in it may run code or touch the disk outside the review, so the options that would
are dropped (and the result says which): mypy's ``plugins`` (imported and run),
``python_executable`` (run to find packages), ``install_types`` (runs pip), ``pdb``, caches,
reports, and search paths that lead outside the workspace. ruff's ``fix`` and ``cache-dir``
are overridden on its command line (and its report goes to a file in the private directory);
vulture's options are passed as flags, so ``make_whitelist`` cannot change its output.
"""

from __future__ import annotations

import configparser
import io
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeward.kernel.workspace import Workspace

MAX_CONFIG_BYTES = 1_000_000
MYPY_FILES = ("mypy.ini", ".mypy.ini", "pyproject.toml", "setup.cfg")
"""mypy's own search order in a directory."""
RUFF_FILES = (".ruff.toml", "ruff.toml", "pyproject.toml")
"""ruff's own search order in a directory."""
MYPY_DROPPED = frozenset({
    "plugins", "python_executable", "install_types", "non_interactive", "pdb", "files", "packages", "modules",
    "junit_xml", "junit_format", "cache_dir", "sqlite_cache", "cache_fine_grained", "incremental",
    "skip_cache_mtime_checks", "custom_typeshed_dir", "exclude", "mypy_path", "warn_unused_configs",
    "ignore_missing_imports_per_module", "follow_imports", "no_site_packages", "site_packages",
})
"""mypy options codeward never passes on: they run code, write files, read outside the
workspace, or are set on the command line instead (files, follow_imports, exclude, mypy_path)."""
MYPY_SAFETY = frozenset({"plugins", "python_executable", "install_types", "non_interactive", "pdb",
                         "custom_typeshed_dir", "junit_xml"})
"""Dropped options worth telling the user about (the rest are replaced by codeward's own)."""
CONFIG_DIR_VARIABLE = "$MYPY_CONFIG_FILE_DIR"


@dataclass(frozen=True)
class MypySettings:
    """A project's mypy configuration, rewritten without the unsafe options."""

    source: Path
    directory: Path
    """The configuration's folder: mypy runs there, as it would for the project's developers."""
    ini: str
    exclude: re.Pattern[str] | None = None
    mypy_path: tuple[Path, ...] = ()
    dropped: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProjectConfig:
    """What the reviewed project configures for its analyzers (empty for an isolated review)."""

    ruff_source: Path | None = None
    mypy: MypySettings | None = None
    bandit_args: tuple[str, ...] = ()
    bandit_source: Path | None = None
    vulture_args: tuple[str, ...] = ()
    vulture_paths: tuple[Path, ...] = ()
    vulture_source: Path | None = None
    biome_source: Path | None = None
    notes: tuple[str, ...] = ()
    used: Mapping[str, str] = field(default_factory=dict)
    """Analyzer name to the configuration file it honours, as the user sees the path."""


def discover(files: Iterable[Path], workspace: Workspace) -> ProjectConfig:
    """The configuration the analyzers of ``files`` would read, from their folder up to the workspace root."""
    paths = [path for path in files]
    if not paths:
        return ProjectConfig()
    start = Path(os.path.commonpath([str(p.parent) for p in paths]))
    folders = _folders(start, workspace)
    notes: list[str] = []
    readable = _Reader(workspace, notes)
    mypy = _find_mypy(folders, readable, workspace, notes)
    bandit_args, bandit_source = _find_bandit(folders, readable)
    vulture_args, vulture_paths, vulture_source = _find_vulture(folders, readable, workspace)
    ruff_source = _first(folders, RUFF_FILES, lambda p: p.name != "pyproject.toml" or _has_table(readable, p, "ruff"))
    biome_source = _first(folders, ("biome.json", "biome.jsonc"), lambda _p: True)
    sources = {"ruff": ruff_source, "mypy": mypy.source if mypy else None, "bandit": bandit_source,
               "vulture": vulture_source, "biome": biome_source,
               "shellcheck": _first(folders, (".shellcheckrc", "shellcheckrc"), lambda _p: True)}
    used = {tool: workspace.display(path) for tool, path in sources.items() if path is not None}
    return ProjectConfig(ruff_source=ruff_source, mypy=mypy, bandit_args=bandit_args, bandit_source=bandit_source,
                         vulture_args=vulture_args, vulture_paths=vulture_paths, vulture_source=vulture_source,
                         biome_source=biome_source, notes=tuple(notes), used=used)


def _folders(start: Path, workspace: Workspace) -> list[Path]:
    """``start`` and its parents up to the workspace root that holds it."""
    root = next((r for r in workspace.roots if start == r or start.is_relative_to(r)), start)
    folders = [start]
    for parent in start.parents:
        if not parent.is_relative_to(root):
            break
        folders.append(parent)
    return folders


class _Reader:
    """Reads configuration files through the workspace gate (a link leading outside is not followed)."""

    def __init__(self, workspace: Workspace, notes: list[str]) -> None:
        self.workspace = workspace
        self.notes = notes
        self._toml: dict[Path, dict[str, Any] | None] = {}

    def text(self, path: Path) -> str | None:
        if not path.is_file():
            return None
        resolved = self.workspace.resolve(str(path))
        if not resolved.ok:
            self.notes.append(f"{self.workspace.display(path)} was not read: {resolved.error_text()}")
            return None
        try:
            with resolved.data.open("rb") as handle:
                data = handle.read(MAX_CONFIG_BYTES + 1)
        except OSError as exc:
            self.notes.append(f"{self.workspace.display(path)} could not be read: {exc.strerror}")
            return None
        if len(data) > MAX_CONFIG_BYTES:
            self.notes.append(f"{self.workspace.display(path)} is larger than {MAX_CONFIG_BYTES:,} bytes; ignored")
            return None
        return data.decode("utf-8", errors="replace")

    def toml(self, path: Path) -> dict[str, Any] | None:
        if path not in self._toml:
            text = self.text(path)
            parsed: dict[str, Any] | None = None
            if text is not None:
                try:
                    parsed = tomllib.loads(text)
                except tomllib.TOMLDecodeError as exc:
                    self.notes.append(f"{self.workspace.display(path)} is not valid TOML ({exc}); its analyzer "
                                      "settings were ignored")
            self._toml[path] = parsed
        return self._toml[path]


def _has_table(reader: _Reader, path: Path, name: str) -> bool:
    document = reader.toml(path)
    tool = document.get("tool") if document else None
    return isinstance(tool, dict) and isinstance(tool.get(name), dict)


def _first(folders: Sequence[Path], names: Sequence[str], accept: Any) -> Path | None:
    for folder in folders:
        for name in names:
            candidate = folder / name
            if candidate.is_file() and accept(candidate):
                return candidate
    return None


# -- mypy ----------------------------------------------------------------------------------------

def _find_mypy(folders: Sequence[Path], reader: _Reader, workspace: Workspace,
               notes: list[str]) -> MypySettings | None:
    for folder in folders:
        for name in MYPY_FILES:
            path = folder / name
            if not path.is_file():
                continue
            sections = _mypy_sections(path, reader)
            if sections is not None:
                return _sanitize_mypy(path, sections, workspace, notes)
    return None


def _mypy_sections(path: Path, reader: _Reader) -> dict[str, dict[str, str]] | None:
    """The ``[mypy]`` and ``[mypy-pattern]`` sections of a config file, values as INI text."""
    if path.name == "pyproject.toml":
        document = reader.toml(path)
        tool = (document or {}).get("tool")
        table = tool.get("mypy") if isinstance(tool, dict) else None
        return _from_pyproject(table) if isinstance(table, dict) else None
    text = reader.text(path)
    if text is None:
        return None
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        reader.notes.append(f"{reader.workspace.display(path)} could not be parsed ({exc.message}); mypy ran "
                            "without it")
        return None
    if not parser.has_section("mypy"):
        return None
    return {name: dict(parser.items(name)) for name in parser.sections() if name == "mypy" or
            name.startswith("mypy-")}


def _ini_value(value: object) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, list):
        return ", ".join(_ini_value(item) for item in value)
    return str(value)


def _from_pyproject(table: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {"mypy": {}}
    for key, value in table.items():
        if key == "overrides" and isinstance(value, list):
            for override in value:
                if not isinstance(override, dict):
                    continue
                modules = override.get("module")
                names = [modules] if isinstance(modules, str) else [m for m in modules or [] if isinstance(m, str)]
                options = {k: _ini_value(v) for k, v in override.items() if k != "module"}
                if names and options:
                    sections.setdefault(f"mypy-{','.join(names)}", {}).update(options)
        elif key == "exclude" and isinstance(value, list):
            sections["mypy"][key] = "|".join(f"(?:{item})" for item in value)
        else:
            sections["mypy"][key] = _ini_value(value)
    return sections


def _sanitize_mypy(path: Path, sections: dict[str, dict[str, str]], workspace: Workspace,
                   notes: list[str]) -> MypySettings:
    directory = path.parent
    display = workspace.display(path)
    dropped: list[str] = []
    clean: dict[str, dict[str, str]] = {}
    global_options = sections.get("mypy", {})
    for name, options in sections.items():
        kept: dict[str, str] = {}
        for key, value in options.items():
            key = key.strip().replace("-", "_")
            if key in MYPY_DROPPED or key.endswith("_report") or "cache" in key:
                if key in MYPY_SAFETY or key.endswith("_report"):
                    dropped.append(key)
                continue
            kept[key] = value.replace(CONFIG_DIR_VARIABLE, str(directory))
        clean[name] = kept
    exclude = _exclude(global_options.get("exclude"), display, notes)
    search = _mypy_path(global_options.get("mypy_path"), directory, workspace, display, notes)
    if dropped:
        notes.append(f"mypy: {display} sets {', '.join(sorted(set(dropped)))}, which codeward does not pass on "
                     "(they would run code or write files); the rest of it applies")
    if search:
        clean.setdefault("mypy", {})["mypy_path"] = ",".join(str(entry) for entry in search)
    parser = configparser.RawConfigParser()
    for name, options in clean.items():
        parser[name] = options
    buffer = io.StringIO()
    parser.write(buffer)
    return MypySettings(source=path, directory=directory, ini=buffer.getvalue(), exclude=exclude,
                        mypy_path=search, dropped=tuple(sorted(set(dropped))))


def _exclude(raw: str | None, display: str, notes: list[str]) -> re.Pattern[str] | None:
    if not raw or not raw.strip():
        return None
    try:
        return re.compile(raw.strip(), re.VERBOSE if "\n" in raw.strip() else 0)
    except re.error as exc:
        notes.append(f"mypy: the exclude pattern of {display} is not a valid regular expression ({exc}); ignored")
        return None


def _mypy_path(raw: str | None, directory: Path, workspace: Workspace, display: str,
               notes: list[str]) -> tuple[Path, ...]:
    if not raw:
        return ()
    kept: list[Path] = []
    for entry in re.split(r"[,:]", raw.replace(CONFIG_DIR_VARIABLE, str(directory))):
        entry = entry.strip()
        if not entry:
            continue
        resolved = (directory / entry).resolve()
        if workspace.contains(resolved):
            kept.append(resolved)
        else:
            notes.append(f"mypy: {display} adds {entry!r} to mypy_path, which is outside the workspace; ignored")
    return tuple(kept)


# -- bandit and vulture ----------------------------------------------------------------------------

def _find_bandit(folders: Sequence[Path], reader: _Reader) -> tuple[tuple[str, ...], Path | None]:
    for folder in folders:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _has_table(reader, pyproject, "bandit"):
            return ("-c", str(pyproject)), pyproject
        legacy = folder / ".bandit"
        if legacy.is_file() and reader.text(legacy) is not None:
            return ("--ini", str(legacy)), legacy
    return (), None


VULTURE_LISTS = {"exclude": "--exclude", "ignore_decorators": "--ignore-decorators", "ignore_names": "--ignore-names"}


def _find_vulture(folders: Sequence[Path], reader: _Reader,
                  workspace: Workspace) -> tuple[tuple[str, ...], tuple[Path, ...], Path | None]:
    """``[tool.vulture]`` as command-line flags, plus the whitelist modules its ``paths`` name."""
    for folder in folders:
        pyproject = folder / "pyproject.toml"
        if not (pyproject.is_file() and _has_table(reader, pyproject, "vulture")):
            continue
        document = reader.toml(pyproject) or {}
        table: dict[str, Any] = document["tool"]["vulture"]
        args: list[str] = []
        for key, flag in VULTURE_LISTS.items():
            values = table.get(key)
            if isinstance(values, list) and values:
                args += [flag, ",".join(str(v) for v in values)]
        confidence = table.get("min_confidence")
        if isinstance(confidence, int) and not isinstance(confidence, bool) and 0 <= confidence <= 100:
            args += ["--min-confidence", str(confidence)]
        whitelists: list[Path] = []
        for entry in table.get("paths") or []:
            candidate = (folder / str(entry)).resolve()
            if candidate.suffix == ".py" and candidate.is_file() and workspace.contains(candidate):
                whitelists.append(candidate)
        return tuple(args), tuple(whitelists), pyproject
    return (), (), None
