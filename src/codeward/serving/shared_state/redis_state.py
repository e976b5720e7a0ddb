"""The Redis state backend: every replica of a deployment shares one Redis (official ``redis`` client,
asyncio API).

Keys (under ``[state] key_prefix``): ``events:<session>`` a Redis stream per MCP session (the
entry id is the SSE event id; trimmed to the newest entries, expiring an hour after the last);
``session:<session>`` the ``initialize`` request that opened a session (another replica replays it to
take the session up); ``call:<session>:<stream>`` the JSON-RPC request of a call in flight; ``lease:<session>:<stream>``
the replica running it, expiring unless renewed; ``approval:<id>``, the set ``approvals`` and
``approval-answer:<id>`` pending approvals and their answers, announced on the pub/sub channel
``approval-answers:<id>``; ``replica:<replica>`` a replica's heartbeat (expiring a lease after its last
renewal: the approvals of a replica without one for a further lease — ``suspect:<replica>`` says since
when — are reaped, ``approval-gone:<id>`` keeping why for a day);
``audit`` a stream of every replica's audit records (``audit-sent:<id>`` the ids it has, a day, so a
record sent again after a timeout is not stored twice); ``pins`` and
``pins-version`` the gateway's tool pins (:mod:`codeward.serving.shared_state.redis_pins`); ``metrics`` a hash
replica → its call figures (:mod:`codeward.serving.shared_state.metrics`), kept a day after the last write.
Every Redis error becomes
:class:`StateUnavailable`, within ``[state] timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, StreamId
from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCResponse, jsonrpc_message_adapter
from redis import asyncio as aioredis
from redis.exceptions import RedisError

from codeward.config.state import StateSettings
from codeward.kernel.state_unavailable import StateUnavailable
from codeward.serving.shared_state.backend import CallRecord, EventLog, StoredEvent
from codeward.serving.shared_state.redis_client import open_redis
from codeward.serving.shared_state.redis_pins import RedisPins

log = logging.getLogger(__name__)

MAX_EVENTS_PER_SESSION = 5000
EVENTS_TTL_S = 3600
CALL_TTL_S = 86400
SESSION_TTL_S = 86400
MAX_AUDIT = 100_000
METRICS_TTL_S = 86400
BEGIN_CALL = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
  return false
end
return redis.call('GET', KEYS[1])
"""
"""Record a call and its lease unless the same request is recorded already (then: that record)."""
AUDIT_SENT_TTL_S = 86400
AUDIT_ONCE = """
if redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[3]) then
  return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'r', ARGV[1])
end
return false
"""
"""Add an audit record to the stream once per record id (``audit-sent:<id>`` remembers it a day)."""
MISSING_FOR_A_LEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local first = redis.call('GET', KEYS[1])
if not first then
  redis.call('SET', KEYS[1], now, 'PX', 3 * tonumber(ARGV[1]))
  return 0
end
if now - tonumber(first) >= tonumber(ARGV[1]) then return 1 end
return 0
"""
"""1 once a replica's heartbeat has been seen missing for a whole lease (``suspect:<replica>`` holds, in
Redis's own clock, when it was first seen missing); 0 the first time and until then."""


class RedisState:
    """Shared state in Redis; one instance per replica (connections are made on first use)."""

    shared = True

    def __init__(self, settings: StateSettings) -> None:
        self.replica = uuid.uuid4().hex[:12]
        self._redis, self.where, self._check = open_redis(settings)
        self._prefix = settings.key_prefix
        self._timeout = settings.timeout
        self._lease_ms = int(settings.lease * 1000)
        self._mine: set[tuple[str, str]] = set()

    def key(self, *parts: str) -> str:
        return ":".join((self._prefix, *parts))

    @asynccontextmanager
    async def _calling(self) -> AsyncIterator[aioredis.Redis]:
        """Every Redis command runs in here: its failures become one clear error naming Redis."""
        try:
            yield self._redis
        except (RedisError, OSError) as error:
            raise StateUnavailable(self.where, error, self._check) from error

    def events(self, session_id: str) -> EventLog:
        return _RedisEvents(self, session_id)

    async def check(self) -> None:
        async with self._calling() as redis:
            await redis.ping()

    async def remember_session(self, session_id: str, initialize: dict[str, Any]) -> None:
        async with self._calling() as redis:
            await redis.set(self.key("session", session_id), json.dumps(initialize), ex=SESSION_TTL_S)

    async def session_opening(self, session_id: str) -> dict[str, Any] | None:
        async with self._calling() as redis:
            raw = await redis.get(self.key("session", session_id))
            if raw is not None:
                await redis.expire(self.key("session", session_id), SESSION_TTL_S)
        return dict(json.loads(raw)) if raw is not None else None

    async def begin_call(self, record: CallRecord) -> str | None:
        # One script: of two replicas handed the same request (a balancer's retry after a timeout while
        # the first replica hung), exactly one records it, with its lease, and runs it.
        async with self._calling() as redis:
            existing = await redis.eval(  # type: ignore[misc]
                BEGIN_CALL, 2, self.key("call", record.session_id, record.stream_id),
                self.key("lease", record.session_id, record.stream_id),
                json.dumps({"request": record.request, "owner": record.owner}), str(CALL_TTL_S), self.replica,
                str(self._lease_ms))
        if existing is not None:
            return str(json.loads(existing).get("owner") or "another replica")
        self._mine.add((record.session_id, record.stream_id))
        return None

    async def end_call(self, session_id: str, stream_id: str) -> None:
        self._mine.discard((session_id, stream_id))
        async with self._calling() as redis:
            await redis.delete(self.key("call", session_id, stream_id), self.key("lease", session_id, stream_id))

    async def renew_leases(self) -> None:
        async with self._calling() as redis, redis.pipeline(transaction=False) as pipe:
            pipe.set(self.key("replica", self.replica), "alive", px=self._lease_ms)
            for session_id, stream_id in self._mine:
                pipe.set(self.key("lease", session_id, stream_id), self.replica, px=self._lease_ms)
            await pipe.execute()

    async def call_record(self, session_id: str, stream_id: str) -> CallRecord | None:
        async with self._calling() as redis:
            raw = await redis.get(self.key("call", session_id, stream_id))
        if raw is None:
            return None
        data = json.loads(raw)
        return CallRecord(session_id, stream_id, data["request"], data["owner"])

    async def lease_alive(self, session_id: str, stream_id: str) -> bool:
        async with self._calling() as redis:
            return bool(await redis.exists(self.key("lease", session_id, stream_id)))

    async def claim(self, session_id: str, stream_id: str) -> bool:
        async with self._calling() as redis:
            won = await redis.set(self.key("lease", session_id, stream_id), self.replica, nx=True, px=self._lease_ms)
        if won:
            self._mine.add((session_id, stream_id))
        return bool(won)

    async def open_approval(self, approval_id: str, data: dict[str, Any]) -> None:
        async with self._calling() as redis, redis.pipeline(transaction=True) as pipe:
            pipe.set(self.key("replica", self.replica), "alive", px=self._lease_ms)
            pipe.set(self.key("approval", approval_id), json.dumps(data), ex=CALL_TTL_S)
            pipe.sadd(self.key("approvals"), approval_id)
            await pipe.execute()

    async def pending_approvals(self) -> list[dict[str, Any]]:
        async with self._calling() as redis:
            ids = sorted(await redis.smembers(self.key("approvals")))  # type: ignore[misc]
            raw = await redis.mget([self.key("approval", i) for i in ids]) if ids else []
            gone = [i for i, text in zip(ids, raw, strict=True) if text is None]
            if gone:
                await redis.srem(self.key("approvals"), *gone)  # type: ignore[misc]
            pending = [json.loads(text) for text in raw if text is not None]
            holders = sorted({str(data.get("replica")) for data in pending})
            alive = dict(zip(holders, await redis.mget([self.key("replica", r) for r in holders]), strict=True)) \
                if holders else {}
            dead = await self._dead_replicas(redis, [r for r in holders if alive[r] is None],
                                             [r for r in holders if alive[r] is not None])
        orphans = [data for data in pending if str(data.get("replica")) in dead]
        for data in orphans:
            await self._reap(data)
        return sorted((data for data in pending if data not in orphans), key=lambda d: d.get("opened", 0))

    async def _dead_replicas(self, redis: aioredis.Redis, missing: list[str], present: list[str]) -> set[str]:
        """Of the replicas whose heartbeat is missing now, those seen missing for a whole lease: after Redis
        itself was away (a restart, a Sentinel failover) every heartbeat is missing until its replica renews
        it (within a second), and a live replica's held call must not be reaped for Redis's absence."""
        if present:
            await redis.delete(*(self.key("suspect", r) for r in present))
        dead = set()
        for replica in missing:
            if await redis.eval(MISSING_FOR_A_LEASE, 1, self.key("suspect", replica),  # type: ignore[misc]
                                str(self._lease_ms)):
                dead.add(replica)
        return dead

    async def _reap(self, data: dict[str, Any]) -> None:
        """Withdraw an approval whose replica has no heartbeat (killed, or cut off from Redis longer than a
        lease): its call cannot run any more, so nobody may approve it."""
        approval_id = str(data.get("id"))
        log.warning("approval %s of replica %s reaped: the replica is gone", approval_id, data.get("replica"))
        await self._withdraw(approval_id, {**data, "gone": "died"})

    async def answer_approval(self, approval_id: str, approved: bool, by: str) -> bool | None:
        answer = json.dumps({"approved": approved, "by": by})
        async with self._calling() as redis:
            if not await redis.exists(self.key("approval", approval_id)):
                return None
            if not await redis.set(self.key("approval-answer", approval_id), answer, nx=True, ex=CALL_TTL_S):
                return False
            await redis.srem(self.key("approvals"), approval_id)  # type: ignore[misc]
            await redis.publish(self.key("approval-answers", approval_id), answer)
        return True

    async def wait_approval(self, approval_id: str) -> dict[str, Any]:
        # A Redis that goes away while a call waits (a restart, a Sentinel failover) does not end the wait:
        # the answer is kept under its key, so the wait subscribes again and finds it once Redis is back.
        # The caller's own deadline bounds the whole wait.
        warned = False
        while True:
            try:
                return await self._wait_answer(approval_id)
            except StateUnavailable as error:
                if not warned:
                    log.warning("%s; approval %s keeps waiting until Redis answers again", error, approval_id)
                    warned = True
                await asyncio.sleep(min(1.0, self._timeout / 2))

    async def _wait_answer(self, approval_id: str) -> dict[str, Any]:
        channel = self.key("approval-answers", approval_id)
        async with self._calling() as redis:
            pubsub = redis.pubsub()
            try:
                await pubsub.subscribe(channel)
                while True:
                    known, gone = await redis.mget([self.key("approval-answer", approval_id),
                                                     self.key("approval-gone", approval_id)])
                    if known is not None:
                        return dict(json.loads(known))
                    if gone is not None:  # reaped while this replica did not renew (stopped, cut off)
                        return {"approved": False, "by": "nobody", "gone": json.loads(gone).get("gone", "died")}
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=self._timeout / 2)
                    if message is not None:
                        return dict(json.loads(message["data"]))
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def withdraw_approval(self, approval_id: str) -> None:
        async with self._calling() as redis:
            raw = await redis.get(self.key("approval", approval_id))
        await self._withdraw(approval_id, {**(json.loads(raw) if raw else {"id": approval_id}), "gone": "stopped"})

    async def _withdraw(self, approval_id: str, tombstone: dict[str, Any]) -> None:
        async with self._calling() as redis, redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.key("approval", approval_id))
            pipe.srem(self.key("approvals"), approval_id)
            pipe.set(self.key("approval-gone", approval_id), json.dumps(tombstone), ex=CALL_TTL_S)
            await pipe.execute()

    async def approval_gone(self, approval_id: str) -> dict[str, Any] | None:
        async with self._calling() as redis:
            raw = await redis.get(self.key("approval-gone", approval_id))
        return dict(json.loads(raw)) if raw else None

    async def audit(self, record: Mapping[str, Any]) -> None:
        """Add the record to the stream unless a record with its ``id`` was added in the last day (a resend
        after a send that timed out once Redis had it): one script, so the check and the add are one step."""
        record_id = str(record.get("id") or uuid.uuid4().hex)
        async with self._calling() as redis:
            await redis.eval(AUDIT_ONCE, 2, self.key("audit"),  # type: ignore[misc]
                             self.key("audit-sent", record_id), json.dumps(dict(record)), str(MAX_AUDIT),
                             str(AUDIT_SENT_TTL_S))

    async def recent_audit(self, count: int) -> list[dict[str, Any]]:
        async with self._calling() as redis:
            entries = await redis.xrevrange(self.key("audit"), count=count)
        return [dict(json.loads(fields["r"])) for _, fields in entries]

    async def publish_metrics(self, figures: Mapping[str, Any]) -> None:
        async with self._calling() as redis, redis.pipeline(transaction=False) as pipe:
            pipe.hset(self.key("metrics"), self.replica, json.dumps(dict(figures)))
            pipe.expire(self.key("metrics"), METRICS_TTL_S)
            await pipe.execute()

    async def replica_metrics(self) -> dict[str, dict[str, Any]]:
        async with self._calling() as redis:
            raw = await redis.hgetall(self.key("metrics"))  # type: ignore[misc]
        found: dict[str, dict[str, Any]] = {}
        for replica, text in raw.items():
            with contextlib.suppress(ValueError):
                figures = json.loads(text)
                if isinstance(figures, dict):
                    found[str(replica)] = figures
        return found

    def pins(self) -> RedisPins:
        return RedisPins(self)

    async def aclose(self) -> None:
        with contextlib.suppress(RedisError, OSError):  # a Redis that went away
            await self._redis.aclose()

    # -- events -------------------------------------------------------------------------

    async def _append(self, session_id: str, stream_id: str, message: str) -> str:
        key = self.key("events", session_id)
        async with self._calling() as redis, redis.pipeline(transaction=True) as pipe:
            pipe.xadd(key, {"s": stream_id, "m": message}, maxlen=MAX_EVENTS_PER_SESSION, approximate=True)
            pipe.expire(key, EVENTS_TTL_S)
            event_id, _ = await pipe.execute()
        return str(event_id)

    async def _range(self, session_id: str, start: str, end: str = "+", count: int | None = None) -> list[Any]:
        async with self._calling() as redis:
            return list(await redis.xrange(self.key("events", session_id), start, end, count=count))

    async def _read(self, session_id: str, after: str, wait: float) -> list[Any]:
        block = max(1, int(min(wait, self._timeout / 2) * 1000))
        async with self._calling() as redis:
            answer = await redis.xread({self.key("events", session_id): after}, block=block, count=500)
        return list(answer[0][1]) if answer else []


class _RedisEvents:
    """One session's event log: a Redis stream whose entry ids are the SSE event ids."""

    def __init__(self, state: RedisState, session_id: str) -> None:
        self._state = state
        self._session = session_id

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        text = "" if message is None else _dump(message)
        try:
            event_id = await self._state._append(self._session, stream_id, text)
        except StateUnavailable as error:
            # The SDK's router must not die with Redis: the event goes out without a resumable id.
            log.warning("%s", error)
            event_id = ""
        if _is_answer(message):
            try:
                await self._state.end_call(self._session, stream_id)
            except StateUnavailable as error:
                log.warning("%s", error)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        stream_id = await self.stream_of(last_event_id)
        if stream_id is None:
            return None
        for event in await self._state._range(self._session, f"({last_event_id}"):
            entry_id, fields = event
            if fields.get("s") == stream_id and fields.get("m"):
                await send_callback(EventMessage(jsonrpc_message_adapter.validate_json(fields["m"]), entry_id))
        return stream_id

    async def stream_of(self, event_id: str) -> str | None:
        if not _valid_id(event_id):
            return None
        found = await self._state._range(self._session, event_id, event_id, count=1)
        return str(found[0][1].get("s")) if found else None

    async def stream_events(self, stream_id: str) -> Sequence[StoredEvent]:
        return [StoredEvent(entry_id, stream_id, fields.get("m") or None)
                for entry_id, fields in await self._state._range(self._session, "-")
                if fields.get("s") == stream_id]

    async def read_after(self, event_id: str, wait: float) -> Sequence[StoredEvent]:
        return [StoredEvent(entry_id, str(fields.get("s")), fields.get("m") or None)
                for entry_id, fields in await self._state._read(self._session, event_id, wait)]


def _valid_id(event_id: str) -> bool:
    """A Redis stream entry id (``<ms>-<seq>``); anything else is not an event of this backend."""
    left, dash, right = event_id.partition("-")
    return bool(dash) and left.isdigit() and right.isdigit()


def _is_answer(message: JSONRPCMessage | None) -> bool:
    return isinstance(message, (JSONRPCResponse, JSONRPCError))


def _dump(message: JSONRPCMessage) -> str:
    return jsonrpc_message_adapter.dump_json(message, by_alias=True, exclude_unset=True).decode()
