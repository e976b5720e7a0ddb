"""Tool pinning: remember a hash of each upstream tool and notice when it is redefined.

An upstream server can change a tool's description or schema at any time (a "rug pull":
the tool the user approved yesterday now asks for ``~/.ssh``). With pinning on, the first
definition seen is recorded (trust on first use) in a JSON file; later a different
definition is logged (``warn``) or the tool is withheld and its calls refused (``refuse``)
until the user re-pins it with ``codeward servers --repin``.

:class:`PinStore` is the seam: :class:`PinFile` keeps one machine's pins in a JSON file; replicas
of a team gateway share theirs in Redis (:class:`codeward.serving.shared_state.redis_pins.RedisPins`), where the
first replica to pin a tool decides for all and a re-pin on one is seen by every one.

The hash covers the name, description, input and output schemas and the annotations (so a
tool cannot quietly start calling itself read-only either).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from codeward.kernel import state_dir
from codeward.kernel.state_dir import StateDir


class PinVerdict(StrEnum):
    NEW = "new"
    SAME = "same"
    CHANGED = "changed"


def tool_fingerprint(definition: Mapping[str, Any]) -> str:
    """SHA-256 over what a model reads of a tool (MCP wire field names)."""
    keys = ("name", "description", "inputSchema", "outputSchema", "annotations")
    blob = json.dumps({k: definition.get(k) for k in keys}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class PinStore(Protocol):
    """Where a gateway's pins live; keys are ``alias/tool``, values SHA-256 fingerprints."""

    @property
    def shared(self) -> bool:
        """Whether other processes (replicas) see these pins: then every call is checked against them."""
        ...

    @property
    def where(self) -> str:
        """The store, for messages (a file, or Redis without its password)."""
        ...

    async def load(self) -> dict[str, str]:
        """Every pin."""
        ...

    async def claim(self, fingerprints: Mapping[str, str]) -> dict[str, str]:
        """Pin each tool not pinned yet (trust on first use; atomic across replicas) and return the pin
        in force for every key asked — the caller's own fingerprint where it was first."""
        ...

    async def repin(self, fingerprints: Mapping[str, str]) -> None:
        """Trust these definitions from now on (a person reviewed them)."""
        ...

    async def version(self) -> int:
        """A number that changes whenever a pin is taken or replaced (cheap to poll)."""
        ...


@dataclass
class PinFile:
    """Pins in a JSON file: ``{"tools": {"alias/tool": {"sha256": ..., "pinned": ...}}}``.

    Without a path it is only a mirror in memory (what a gateway on shared pins checks its list
    against between calls)."""

    path: Path | None
    _pins: dict[str, dict[str, Any]]
    _version: int = field(default=0)
    shared = False

    @property
    def where(self) -> str:
        return str(self.path) if self.path is not None else "memory"

    @classmethod
    def memory(cls) -> PinFile:
        """An empty mirror in memory (nothing saved)."""
        return cls(None, {})

    @classmethod
    def open(cls, path: Path) -> PinFile:
        pins: dict[str, dict[str, Any]] = {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            tools = data.get("tools", {}) if isinstance(data, dict) else {}
            pins = {str(k): dict(v) for k, v in tools.items() if isinstance(v, dict) and "sha256" in v}
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            raise ValueError(f"pin file {path} is unreadable ({exc}); fix or delete it to re-pin every tool") from exc
        return cls(path, pins)

    @staticmethod
    def key(alias: str, tool: str) -> str:
        return f"{alias}/{tool}"

    def check(self, alias: str, tool: str, fingerprint: str) -> PinVerdict:
        """Compare with the pin; a tool never seen before is pinned now (call :meth:`save`)."""
        entry = self._pins.get(self.key(alias, tool))
        if entry is None:
            self._pins[self.key(alias, tool)] = {"sha256": fingerprint, "pinned": _now()}
            return PinVerdict.NEW
        return PinVerdict.SAME if entry.get("sha256") == fingerprint else PinVerdict.CHANGED

    def pin(self, alias: str, tool: str, fingerprint: str) -> None:
        """Accept a (new) definition as the trusted one."""
        self._pins[self.key(alias, tool)] = {"sha256": fingerprint, "pinned": _now()}

    def pinned(self, alias: str) -> dict[str, str]:
        prefix = f"{alias}/"
        return {k[len(prefix):]: str(v["sha256"]) for k, v in self._pins.items() if k.startswith(prefix)}

    def replace_all(self, pins: Mapping[str, str]) -> None:
        """Make the mirror what the shared store holds."""
        self._pins = {key: {"sha256": sha} for key, sha in pins.items()}

    async def load(self) -> dict[str, str]:
        return {key: str(entry["sha256"]) for key, entry in self._pins.items()}

    async def claim(self, fingerprints: Mapping[str, str]) -> dict[str, str]:
        taken = False
        for key, fingerprint in fingerprints.items():
            if key not in self._pins:
                self._pins[key] = {"sha256": fingerprint, "pinned": _now()}
                taken = True
        if taken:
            self._version += 1
            self.save()
        return {key: str(self._pins[key]["sha256"]) for key in fingerprints}

    async def repin(self, fingerprints: Mapping[str, str]) -> None:
        for key, fingerprint in fingerprints.items():
            self._pins[key] = {"sha256": fingerprint, "pinned": _now()}
        self._version += 1
        self.save()

    async def version(self) -> int:
        return self._version

    def save(self) -> None:
        """Write atomically (temp file, fsync, rename) so a crash never leaves half a file.

        In a project's ``.codeward/`` (the default) the write goes through its
        :class:`~codeward.kernel.state_dir.StateDir`, which follows no link planted there.
        """
        if self.path is None:
            return
        text = json.dumps({"version": 1, "tools": dict(sorted(self._pins.items()))}, indent=2) + "\n"
        if self.path.parent.name == state_dir.NAME:
            StateDir(self.path.parent.parent).replace(self.path.name, text.encode("utf-8"))
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".pins-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
