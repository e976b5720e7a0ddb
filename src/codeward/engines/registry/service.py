"""The registry as a library: find, search, load, copy, sign and verify items of every space.

The meta-tools, the CLI and the MCP providers are thin adapters over :class:`Registry`.
Signing and checking signatures are :mod:`codeward.engines.registry.trust`'s; this class reads what
they cover through the spaces' gates, and writes what they produce.
A Registry is cheap: it is made per call from the call's workspace (which may change when
the client's roots do) and opens the index only for the operation at hand.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from codeward.engines.files.textfile import atomic_write
from codeward.engines.registry.deps import provided_names
from codeward.engines.registry.index import RegistryIndex
from codeward.engines.registry.items import Item, Kind, Space
from codeward.engines.registry.keys import KeyStore
from codeward.engines.registry.loader import RESERVED_NAMES, load_item
from codeward.engines.registry.settings import RegistrySettings, key_store
from codeward.engines.registry.spaces import Spaces
from codeward.engines.registry.tool_env import SandboxPython, ToolEnvironment, build, environment_for, sandbox_python
from codeward.engines.registry.trust import Covered, Verified, check_imports, covered_by, verify
from codeward.engines.registry.trust import sign as sign_covered
from codeward.engines.registry.validation import check_name
from codeward.kernel import state_dir
from codeward.kernel.context import ToolContext
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.state_dir import StateDir
from codeward.kernel.workspace import Access, Workspace


@dataclass(frozen=True)
class Loaded:
    item: Item
    text: str
    copied_to: str = ""


@dataclass(frozen=True)
class Signed:
    item: Item
    line: str
    display: str
    key: str
    """The key that signed, as shown (``id (name)``)."""
    key_created: str = ""
    """Where a new signing key was made for this first signature ("" when it existed)."""
    covered: tuple[str, ...] = ()
    """What the signature covers, one line each (files, chain, pins)."""


class Registry:
    """Items of a workspace's project space and of the user space."""

    def __init__(self, workspace: Workspace, settings: RegistrySettings) -> None:
        self.workspace = workspace
        self.settings = settings
        self.spaces = Spaces(workspace, settings)

    @classmethod
    def for_context(cls, ctx: ToolContext) -> Registry:
        return cls(ctx.workspace, ctx.services.get(RegistrySettings))

    # -- the index -------------------------------------------------------------------------

    @contextmanager
    def index(self) -> Iterator[RegistryIndex]:
        """The index, brought up to date with the files (only changed files are re-read).

        A project without ``.ai/`` gets no index file (an in-memory one serves the other spaces),
        so merely listing resources never leaves a file in a project that does not use the registry.
        """
        path: Path | None = None
        if self.spaces.project_dir.is_dir():
            with contextlib.suppress(OSError):  # a read-only root or a planted link: an in-memory index
                path = StateDir(self.workspace.primary).database(state_dir.REGISTRY_INDEX)
        with RegistryIndex(path) as index:
            index.refresh(self.spaces.files())
            yield index

    def find(self, name: str, kind: Kind | None = None, space: Space | None = None) -> Result[Item | None]:
        """The item a name resolves to (project before user), or an error naming close matches."""
        if not isinstance(name, str) or not name.strip():
            return Result.fail(ErrorKind.INVALID_INPUT, "name is empty", "Give an item name; find names with "
                               "registry_search.", data=None)
        with self.index() as index:
            found = [i for i in index.named(name.strip(), kind) if space is None or i.space is space]
            if found:
                kinds = {i.kind for i in found}
                if kind is None and len(kinds) > 1:
                    listed = ", ".join(sorted(k.value for k in kinds))
                    return Result.fail(ErrorKind.CONFLICT, f"{name!r} names several kinds of item ({listed})",
                                       "Pass kind to say which one.", data=None)
                return Result.success(found[0])
            known = index.names(kind)
        where = f" in the {space.value} space" if space else ""
        what = kind.value if kind else "item"
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"Did you mean {', '.join(close)}?" if close else "Search with registry_search, or create one with " \
            "`codeward registry new NAME`."
        return Result.fail(ErrorKind.NOT_FOUND, f"no {what} named {name!r}{where}", hint, data=None)

    def fresh(self, item: Item) -> Result[tuple[Item, bytes] | None]:
        """The item re-read from disk now (bytes and metadata), for operations that must not trust
        the index: signing, running, copying."""
        if item.path is None:
            return Result.success((item, b""))
        gate = self.spaces.gate(item.space)
        checked = gate.resolve(str(item.path), Access.READ, param="item") if gate else None
        display = self.spaces.display(item.path, item.space)
        if checked is None or not checked.ok:
            return Result.fail(ErrorKind.PERMISSION, f"{display} cannot be read here",
                               checked.error_text() if checked else "The user space does not exist.", data=None)
        try:
            data = checked.data.read_bytes()
        except OSError as exc:
            return Result.fail(ErrorKind.NOT_FOUND, f"{display} cannot be read: {exc.strerror}",
                               "It may have been deleted; search again.", data=None)
        return Result.success((load_item(checked.data, item.kind, item.space, display, data), data))

    def _find_fresh(self, name: str, kind: Kind | None, space: Space | None) -> Result[tuple[Item, bytes] | None]:
        """:meth:`find`, then :meth:`fresh`: the named item as it is on disk now."""
        found = self.find(name, kind, space)
        if not found.ok or found.data is None:
            return found.cast(None)
        return self.fresh(found.data)

    # -- operations ----------------------------------------------------------------------

    def load(self, name: str, kind: Kind | None = None, space: Space | None = None,
             destination: Space | None = None, overwrite: bool = False) -> Result[Loaded | None]:
        """An item's text and metadata; with ``destination``, first copy it to that space."""
        read = self._find_fresh(name, kind, space)
        if not read.ok or read.data is None:
            return read.cast(None)
        item, data = read.data
        text = data.decode("utf-8", "replace")
        if destination is None or destination is item.space:
            return Result.success(Loaded(item, text))
        assert item.path is not None
        if destination in (Space.HUB, Space.USER):
            allowed = self._copyable(item, data, destination)
            if not allowed.ok or allowed.data is None:
                return allowed.cast(None)
            extra = allowed.data.files[1:]
        else:
            extra = self.covered(item, data).files[1:] if item.kind is Kind.TOOL else ()
        source_root = self.spaces.folder(item.space, item.kind)
        try:
            relative = item.path.relative_to(source_root.resolve())
        except ValueError:
            relative = Path(item.path.name)
        target = self.spaces.folder(destination, item.kind) / relative
        if destination is Space.HUB and target.is_file() and not overwrite and target.read_bytes() != data:
            published = load_item(target, item.kind, Space.HUB, str(target))
            if not self._newer_than_published(item, published):
                shown = published.version or "(no version)"
                return Result.fail(ErrorKind.CONFLICT, f"the hub already has {item.name} {shown} with other "
                                   "content; a published version never changes",
                                   "Bump __version__ (version: in front matter), sign it, and publish again — or "
                                   "pass overwrite=true to replace the published copy.", data=None)
            overwrite = True
        for module in extra:  # the tool's local modules travel with it, or its signature breaks
            copied_module = self._write(self.spaces.folder(destination, item.kind) / module.rel, destination,
                                        module.data, overwrite)
            if not copied_module.ok:
                return copied_module.cast(None)
        written = self._write(target, destination, data, overwrite)
        if not written.ok:
            return written.cast(None)
        display = self.spaces.display(written.data, destination)
        copied = load_item(written.data, item.kind, destination, display, data)
        return Result.success(Loaded(copied, text, display))

    def _copyable(self, item: Item, data: bytes, destination: Space) -> Result[Covered | None]:
        """Only items signed by a key the user trusts, unchanged, leave the project for the user
        space (where they would serve every project) or the hub (where the team takes them)."""
        if destination is Space.HUB and self.settings.hub_dir is None:
            return Result.fail(ErrorKind.UNAVAILABLE, "no registry hub is configured",
                               "Set [registry] hub_dir in codeward.toml (or CODEWARD_REGISTRY_HUB) to the "
                               "shared folder (e.g. a git checkout) to publish to.",
                               data=None)
        if item.problems:
            return Result.fail(ErrorKind.INVALID_INPUT, f"{item.name} has invalid metadata and cannot be copied to "
                               f"the {destination.value} space: " + "; ".join(p.render() for p in item.problems),
                               "Fix it and sign it first.", data=None)
        checked = self.verify(item, data)
        if not checked.ok or checked.data is None:
            error = checked.errors[0]
            where = "published" if destination is Space.HUB else "copied to the user space"
            return Result.fail(ErrorKind.PERMISSION, f"{item.name} was not {where}, because its signature does not "
                               f"hold: {error.message}. Only items signed by a key you trust, and unchanged since, "
                               "leave the project", error.hint, data=None)
        return Result.success(checked.data.covered)

    @staticmethod
    def _newer_than_published(item: Item, published: Item) -> bool:
        """Whether ``item`` may replace the hub's copy: a version published once never changes."""
        return bool(item.version and published.version and _version_key(item.version) > _version_key(published.version))

    # -- signatures ------------------------------------------------------------------------

    @property
    def keys(self) -> KeyStore:
        return key_store(self.settings)

    def covered(self, item: Item, data: bytes) -> Covered:
        """What a signature of ``item`` covers as it is on disk now (its closure read through the gate)."""
        assert item.path is not None
        gate = self.spaces.gate(item.space)
        display = self.spaces.display(item.path, item.space)

        def read(path: Path) -> bytes | str:
            if gate is None:
                return "the space does not exist"
            checked = gate.resolve(str(path), Access.READ, param="module")
            if not checked.ok:
                return checked.error_text()
            try:
                return checked.data.read_bytes()
            except OSError as exc:
                return exc.strerror or str(exc)

        def lookup(name: str) -> tuple[Item, bytes] | None:
            found = self.find(name, Kind.TOOL)
            if not found.ok or found.data is None or found.data.space is Space.HUB:
                return None
            fresh = self.fresh(found.data)
            return fresh.data if fresh.ok else None

        root = self.spaces.folder(item.space, item.kind)
        with contextlib.suppress(OSError):
            root = root.resolve()
        return covered_by(item, data, root, read, display, lookup)

    def verify(self, item: Item, data: bytes) -> Result[Verified | None]:
        """Whether ``item`` (whose bytes are ``data``) carries a signature by a trusted key that
        still matches everything it covers."""
        shown = self.spaces.display(item.path, item.space) if item.path else item.name
        return verify(self.covered(item, data), data, self.keys, shown)

    def python(self) -> Result[SandboxPython | None]:
        return sandbox_python(self.settings.python)

    def environment(self, item: Item, requirements: tuple[str, ...], python: SandboxPython) -> ToolEnvironment:
        """Where ``item``'s packages live for these pins (built or not)."""
        return environment_for(item.name, requirements, self._environments_folder(item), python)

    def _environments_folder(self, tool: Item) -> Path:
        if self.settings.venv_dir is not None:
            return self.settings.venv_dir
        if tool.space is Space.PROJECT:
            with contextlib.suppress(OSError):  # a read-only root or a planted link: the user's cache
                return StateDir(self.workspace.primary).folder(state_dir.VENVS)
        return self.settings.user_cache_dir() / "venvs"

    def sign(self, name: str, ctx: ToolContext, kind: Kind | None = None,
             space: Space | None = None) -> Result[Signed | None]:
        """Sign an item with the user's key (made on first use). Callers make sure a person decided
        this (:func:`codeward.approval.consent.ask_person`); this method signs what it is told to.

        Refused while the item has problems, while anything its closure imports is neither standard,
        local nor provided by a declared pin. A tool with pins gets its packages installed first
        (the signer is there to see it), so the check covers what the packages really provide.
        """
        read = self._find_fresh(name, kind, space)
        if not read.ok or read.data is None:
            return read.cast(None)
        item, data = read.data
        if item.space is Space.HUB:
            return Result.fail(ErrorKind.INVALID_INPUT, f"{item.name} is in the shared hub; items are signed where "
                               "they are used", f"Pull it first (`codeward registry pull {item.name}`).", data=None)
        display = self.spaces.display(item.path, item.space) if item.path else item.name
        if item.problems:
            listed = "\n".join(f"- {p.render()}" for p in item.problems)
            return Result.fail(ErrorKind.INVALID_INPUT,
                               f"{item.name} was not signed: its metadata has {len(item.problems)} problem(s):\n"
                               f"{listed}", "Fix these, then sign again.", data=None)
        covered = self.covered(item, data)
        problems = list(covered.problems)
        if not problems and covered.third_party:
            provided = None
            if covered.requirements:
                python = self.python()
                if not python.ok or python.data is None:
                    return python.cast(None)
                env = self.environment(item, covered.requirements, python.data)
                built = build(env, python.data, ctx, self.settings.install_timeout, item.name)
                if not built.ok:
                    return built.cast(None)

                provided = provided_names(env.site)
            problems += check_imports(covered, provided, display)
        if problems:
            covered = replace(covered, problems=tuple(problems))
        signed = sign_covered(covered, data, self.keys)
        if not signed.ok or signed.data is None:
            return signed.cast(None)
        assert item.path is not None
        written = self._write(item.path, item.space, signed.data.data, overwrite=True)
        if not written.ok:
            return written.cast(None)
        made = str(self.keys.private_path) if signed.data.key_created else ""
        loaded = load_item(item.path, item.kind, item.space, display, signed.data.data)
        return Result.success(Signed(loaded, signed.data.line, display, signed.data.key.shown(), made,
                                     describe_covered(covered)))

    def create(self, name: str, kind: Kind, space: Space, text: str, category: str = "") -> Result[Path]:
        """Write a new item file (``category`` is its folder); refuses to replace one."""
        problems = check_name(name, name, RESERVED_NAMES if kind is Kind.TOOL else frozenset())
        if problems:
            return Result.fail(ErrorKind.INVALID_INPUT, f"cannot create {name!r}: {problems[0].message}",
                               problems[0].fix.replace("rename the file", "Choose another name") + ".",
                               data=self.spaces.root(space))
        folder = self.spaces.folder(space, kind)
        if category:
            if not all(part.replace("-", "").replace("_", "").isalnum() for part in category.split("/")):
                return Result.fail(ErrorKind.INVALID_INPUT, f"category {category!r} is not a folder name",
                                   "Use letters, digits, '_' and '-'.", data=folder)
            folder = folder / category
        existing = self.find(name, kind, space)
        if existing.ok and existing.data is not None and existing.data.path is not None:
            shown = self.spaces.display(existing.data.path, space)
            return Result.fail(ErrorKind.CONFLICT, f"a {kind.value} named {name!r} already exists: {shown}",
                               "Choose another name, or edit that file.", data=existing.data.path)
        return self._write(folder / f"{name}{kind.suffix}", space, text.encode("utf-8"), overwrite=False)

    def _write(self, target: Path, space: Space, data: bytes, overwrite: bool) -> Result[Path]:
        if space is Space.HUB and not self.spaces.root(space).is_dir():
            return Result.fail(ErrorKind.NOT_FOUND, f"the registry hub {self.spaces.root(space)} does not exist",
                               "Create the folder, or point [registry] hub_dir (or CODEWARD_REGISTRY_HUB) at an "
                               "existing one.", data=target)
        if space is Space.USER:
            try:
                self.spaces.user_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                return Result.fail(ErrorKind.PERMISSION, f"cannot create the user space {self.spaces.user_dir}: "
                                   f"{exc.strerror}",
                                   "Set [registry] user_dir (or CODEWARD_USER_AI_DIR) to a writable folder.",
                                   data=target)
        gate = self.spaces.gate(space)
        if gate is None:
            return Result.fail(ErrorKind.NOT_FOUND, f"the {space.value} space does not exist", data=target)
        resolved = gate.resolve(str(target), Access.WRITE, param="destination")
        if not resolved.ok:
            return resolved
        real = resolved.data
        display = self.spaces.display(real, space)
        if real.exists() and not overwrite:
            if real.read_bytes() == data:
                return Result.success(real)
            return Result.fail(ErrorKind.CONFLICT, f"{display} already exists with other content",
                               "Pass overwrite=true to replace it, or remove it first.", data=real)
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(real, data)
        except OSError as exc:
            return Result.fail(ErrorKind.PERMISSION, f"cannot write {display}: {exc.strerror}",
                               "Check the folder's permissions.", data=real)
        return Result.success(real)


def _version_key(version: str) -> tuple[int, ...]:
    core = version.split("-")[0].split("+")[0]
    return tuple(int(part) for part in core.split(".") if part.isdigit())


def describe_covered(covered: Covered) -> tuple[str, ...]:
    """What a signature covers, in lines a person reads before approving it."""
    lines = [f"file {entry.rel} ({entry.digest[7:19]})" for entry in covered.files]
    if covered.chain is not None and len(covered.chain.links) > 1:
        lines.append("executor chain " + " → ".join(covered.chain.names()))
    if covered.requirements:
        lines.append("packages " + ", ".join(covered.requirements))
    return tuple(lines)
