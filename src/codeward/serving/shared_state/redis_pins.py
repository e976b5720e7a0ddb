"""The gateway's tool pins in Redis, shared by every replica (see :class:`~codeward.gateway.pins.PinStore`).

Keys (under ``[state] key_prefix``): ``pins`` a hash ``alias/tool`` → ``{"sha256", "pinned"}``, and
``pins-version`` a counter raised by every change, which replicas poll to refresh their tool lists.
The first pin of a tool is ``HSETNX`` inside a ``MULTI`` with the ``HGET`` that reads it back, so
two replicas pinning the same tool at once agree on one definition. Every Redis error becomes
:class:`~codeward.kernel.state_unavailable.StateUnavailable`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol


class RedisAccess(Protocol):
    """What the pins need of the shared state's Redis
    (:class:`~codeward.serving.shared_state.redis_state.RedisState`)."""

    @property
    def where(self) -> str: ...

    def key(self, *parts: str) -> str: ...

    def _calling(self) -> AbstractAsyncContextManager[Any]: ...


class RedisPins:
    """Pins of every replica in one Redis hash."""

    shared = True

    def __init__(self, state: RedisAccess) -> None:
        self._state = state
        self.where = state.where
        self._hash = state.key("pins")
        self._version = state.key("pins-version")

    async def load(self) -> dict[str, str]:
        async with self._state._calling() as redis:
            raw = await redis.hgetall(self._hash)  # type: ignore[misc]
        return {str(key): _sha(value) for key, value in raw.items()}

    async def claim(self, fingerprints: Mapping[str, str]) -> dict[str, str]:
        if not fingerprints:
            return {}
        keys = list(fingerprints)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        async with self._state._calling() as redis, redis.pipeline(transaction=True) as pipe:
            for key in keys:
                pipe.hsetnx(self._hash, key, json.dumps({"sha256": fingerprints[key], "pinned": stamp}))
            pipe.hmget(self._hash, keys)
            answers = await pipe.execute()
            if any(answers[:-1]):
                await redis.incr(self._version)
        return {key: _sha(value) for key, value in zip(keys, answers[-1], strict=True)}

    async def repin(self, fingerprints: Mapping[str, str]) -> None:
        if not fingerprints:
            return
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        mapping = {key: json.dumps({"sha256": sha, "pinned": stamp}) for key, sha in fingerprints.items()}
        async with self._state._calling() as redis, redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._hash, mapping=mapping)
            pipe.incr(self._version)
            await pipe.execute()

    async def version(self) -> int:
        async with self._state._calling() as redis:
            return int(await redis.get(self._version) or 0)


def _sha(value: str | None) -> str:
    """The fingerprint of a stored pin ("" for a pin that is missing or unreadable: matches nothing)."""
    if not value:
        return ""
    try:
        return str(json.loads(value)["sha256"])
    except (ValueError, KeyError, TypeError):
        return ""
