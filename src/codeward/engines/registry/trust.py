"""Signing an item and checking its signature: what a signature covers, and whose it is.

For a **Python tool** the signature covers its whole closure — the tool file, every local
module it can import (:mod:`codeward.engines.registry.closure`), each link of its executor chain
(runtimes by the digest of their file, built-ins by name), its declared pins and the
third-party names it imports. For **api** and **mcp_tool** items: the file and the chain.
For **directives** and **knowledge**: the file. Every digest leaves the file's own signature
line out, so signing one item never invalidates another that imports it.

Checking is strict and ordered, and every refusal says what to do: no signature; an unkeyed
legacy line (the seed's ``kiwi-mcp:validated`` or codeward's old ``codeward:validated``); a
key the user does not trust; anything covered that changed, appeared (a module now shadowing
a declared import) or cannot be read; a signature that does not verify. What was checked —
the exact bytes of every file — is what runs: the runner stages these bytes, not the files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeward.engines.registry.chain import BUILTINS, Chain, build_chain
from codeward.engines.registry.closure import Closure, ClosureFile, tool_closure
from codeward.engines.registry.deps import requirements_of, undeclared_fix, undeclared_imports
from codeward.engines.registry.items import Item, Kind, Problem, Space, ToolType
from codeward.engines.registry.keys import KeyStore, PublicKey, SigningKeyError
from codeward.engines.registry.signing import (
    LegacyLine,
    SignatureLine,
    SignatureStatus,
    digest,
    legacy_message,
    manifest_bytes,
    signature_line,
    split_signature,
    stamp,
    with_signature,
)
from codeward.kernel.result import ErrorKind, Result

ChainLookup = Callable[[str], "tuple[Item, bytes] | None"]
"""Finds an executor by name: the item as it is on disk now, and its bytes."""
Reader = Callable[[Path], "bytes | str"]


@dataclass(frozen=True)
class Covered:
    """Everything one item's signature covers, read once; the closure's bytes are what runs."""

    item: Item
    facts: dict[str, Any]
    files: tuple[ClosureFile, ...]
    chain: Chain | None = None
    requirements: tuple[str, ...] = ()
    third_party: tuple[str, ...] = ()
    problems: tuple[Problem, ...] = ()

    @property
    def local_modules(self) -> tuple[str, ...]:
        return tuple(f.rel for f in self.files[1:])


@dataclass(frozen=True)
class Verified:
    """An item whose signature holds: whose key, when, and the exact bytes that were checked."""

    covered: Covered
    key: PublicKey
    signed_at: str


@dataclass(frozen=True)
class Signed:
    data: bytes
    line: str
    key: PublicKey
    key_created: bool = False
    covered: Covered | None = field(default=None, compare=False)


def covered_by(item: Item, data: bytes, kind_root: Path, read: Reader, display: str,
               lookup: ChainLookup | None) -> Covered:
    """What a signature of ``item`` (whose bytes are ``data``) covers, as it is now on disk."""
    assert item.path is not None
    markdown = item.kind is not Kind.TOOL
    rel = _relative(item.path, kind_root)
    own = ClosureFile(rel, item.path, data)
    facts: dict[str, Any] = {"kind": item.kind.value, "name": item.name}
    if item.kind is not Kind.TOOL:
        facts["files"] = {rel: digest(data, markdown=markdown)}
        return Covered(item, facts, (own,))
    tool_type = item.meta.get("tool_type")
    problems: list[Problem] = []
    chain: Chain | None = None
    links: list[list[str]] = []
    if tool_type not in (ToolType.RUNTIME.value, ToolType.MCP_TOOL.value) or item.meta.get("executor_id"):
        found: dict[str, bytes] = {}

        def find(name: str) -> Item | None:
            located = lookup(name) if lookup is not None else None
            if located is None:
                return None
            found[name] = located[1]
            return located[0]

        built = build_chain(item, find)
        if built.ok and built.data is not None:
            chain = built.data
            for link in chain.links[1:]:
                links.append([link.name, "builtin" if link.space is Space.BUILTIN else digest(found[link.name])])
        elif tool_type != ToolType.RUNTIME.value:
            problems.append(Problem(display, "__executor_id__", built.error_text(), "fix the executor chain"))
    files: tuple[ClosureFile, ...] = (own,)
    third_party: tuple[str, ...] = ()
    if tool_type == ToolType.PYTHON.value:
        closure: Closure = tool_closure(kind_root, item.path, data, read, display)
        files, third_party = closure.files, closure.third_party
        problems += closure.problems
    requirements = tuple(requirements_of(item))
    facts.update({"files": {f.rel: f.digest for f in files}, "chain": links, "dependencies": list(requirements),
                  "imports": sorted(third_party)})
    return Covered(item, facts, files, chain, requirements, third_party, tuple(problems))


def check_imports(covered: Covered, provided: Mapping[str, set[str]] | None, display: str) -> list[Problem]:
    """Each third-party import must come from a declared pin (``provided``: what the installed
    packages offer; ``None`` before they are installed)."""
    missing = undeclared_imports(covered.third_party, covered.requirements, provided)
    return [Problem(display, "import", f"imports {name!r}, which is neither the standard library, a local module "
                    "(beside the tool or in tools/lib) nor provided by a declared dependency",
                    undeclared_fix(name, covered.item.name + ".py")) for name in missing]


def verify(covered: Covered, data: bytes, keys: KeyStore, shown: str) -> Result[Verified | None]:
    """Whether ``data``'s signature holds for what it covers now, by a key the user trusts."""
    item = covered.item
    name = item.name
    header, _body = split_signature(data, markdown=item.kind is not Kind.TOOL)
    resign = f"`codeward sign {name}`"
    if header is None:
        return Result.fail(ErrorKind.PERMISSION, f"{name} is not signed, so it does not run ({shown})",
                           f"Review it, then sign it yourself: {resign} (a model can ask for a signature with "
                           "registry_execute action=\"sign\", which needs your approval).", data=None)
    if isinstance(header, LegacyLine):
        message, hint = legacy_message(name, header)
        return Result.fail(ErrorKind.PERMISSION, f"{message} ({shown})", hint, data=None)
    assert isinstance(header, SignatureLine)
    key = keys.trusted().get(header.key_id)
    if key is None:
        return Result.fail(ErrorKind.PERMISSION, f"{name} is signed by key {header.key_id}, which you do not trust "
                           f"here, so it does not run ({shown})",
                           "If that is a teammate's key, trust it: `codeward registry trust add \"codeward-ed25519 "
                           "...\" --name THEM`; otherwise review the item and sign it yourself: " + resign + ".",
                           data=None)
    if covered.problems:
        listed = "; ".join(p.render() for p in covered.problems)
        return Result.fail(ErrorKind.PERMISSION, f"{name} does not run: {listed}", "Fix this, then sign it again: "
                           + resign + ".", data=None)
    message_bytes = manifest_bytes(covered.facts, header.key_id, header.signed_at)
    if not key.verify(header.signature, message_bytes):
        changed = _changed_since(covered, keys.recall(header.signature, key))
        detail = (f"changed since then: {'; '.join(changed)}" if changed else
                  "what changed may be a file's content, a module added beside it, the executor chain or the pins")
        return Result.fail(ErrorKind.PERMISSION,
                           f"{name} does not match the signature {key.shown()} made on {header.signed_at}: something "
                           f"it covers ({_covers(covered)}) is not as it was signed — {detail} ({shown})",
                           f"Review the changes, then re-sign it: {resign}.", data=None)
    return Result.success(Verified(covered, key, header.signed_at))


def sign(covered: Covered, data: bytes, keys: KeyStore, *, now: datetime | None = None) -> Result[Signed | None]:
    """The item's bytes with a new signature line by the user's key (made on first use)."""
    if covered.problems:
        listed = "\n".join(f"- {p.render()}" for p in covered.problems)
        return Result.fail(ErrorKind.INVALID_INPUT, f"{covered.item.name} was not signed:\n{listed}",
                           "Fix these, then sign again.", data=None)
    try:
        key, created = keys.ensure()
        signed_at = stamp(now or datetime.now(UTC))
        manifest = manifest_bytes(covered.facts, key.key_id, signed_at)
        _key, signature = keys.sign(manifest)
        keys.remember(signature, manifest)
    except (SigningKeyError, OSError) as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot sign {covered.item.name}: {exc}",
                           "Fix the signing key as described, then sign again.", data=None)
    markdown = covered.item.kind is not Kind.TOOL
    line = signature_line(key.key_id, signed_at, signature, markdown=markdown)
    return Result.success(Signed(with_signature(data, line, markdown=markdown), line, key, created, covered))


def status_of(item: Item, data: bytes, keys: KeyStore) -> tuple[SignatureStatus, str]:
    """A quick status for listings: unsigned, legacy, untrusted or signed (by whom, when) —
    without the closure check, which :func:`verify` makes before every run."""
    header, _body = split_signature(data, markdown=item.kind is not Kind.TOOL)
    if header is None:
        return SignatureStatus.UNSIGNED, ""
    if isinstance(header, LegacyLine):
        return SignatureStatus.LEGACY, header.signed_at
    key = keys.trusted().get(header.key_id)
    if key is None:
        return SignatureStatus.UNTRUSTED, f"key {header.key_id}, {header.signed_at}"
    return SignatureStatus.VALID, f"{key.shown()}, {header.signed_at}"


def _covers(covered: Covered) -> str:
    parts = [f"{len(covered.files)} file(s)"]
    if covered.chain is not None and len(covered.chain.links) > 1:
        parts.append("chain " + " → ".join(covered.chain.names()))
    if covered.requirements:
        parts.append("pins " + ", ".join(covered.requirements))
    return "; ".join(parts)


def _changed_since(covered: Covered, manifest: bytes | None) -> list[str]:
    """What differs between the signed manifest (when it was signed here) and the item now."""
    if manifest is None:
        return []
    try:
        then = json.loads(manifest)
    except ValueError:
        return []
    if not isinstance(then, dict):
        return []
    now = covered.facts
    changed: list[str] = []
    recorded = then.get("files")
    old_files: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    new_files: dict[str, Any] = now.get("files", {})
    for rel in sorted(set(old_files) | set(new_files)):
        if rel not in old_files:
            changed.append(f"{rel} (new)")
        elif rel not in new_files:
            changed.append(f"{rel} (gone)")
        elif old_files[rel] != new_files[rel]:
            changed.append(rel)
    for fact, label in (("chain", "the executor chain"), ("dependencies", "the pins"),
                        ("imports", "the third-party imports"), ("kind", "the kind"), ("name", "the name")):
        if then.get(fact) != now.get(fact):
            changed.append(label)
    return changed


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


__all__ = ["BUILTINS", "Covered", "Signed", "Verified", "check_imports", "covered_by", "sign", "status_of", "verify"]
