"""The Redis connection of a replica: one Redis named by ``[state] url``, or the master of
``[state] sentinel_master`` that Redis Sentinel names (redis-py's asyncio Sentinel client).

With Sentinel, a connection asks the Sentinels for the master's address when it connects; a
connection to a master that failed, or that was demoted (it answers ``READONLY``), is dropped and
the next command connects to the master the Sentinels promoted. Commands in between fail like any
Redis outage (:class:`~codeward.kernel.state_unavailable.StateUnavailable`, naming Redis).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from redis import asyncio as aioredis
from redis.asyncio.sentinel import Sentinel

from codeward.config.state import IN_PROCESS, StateSettings, sentinel_address


def public_url(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username + ':***@' if parts.username else ':***@'}{host}{f':{parts.port}' if parts.port else ''}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def open_redis(settings: StateSettings) -> tuple[aioredis.Redis, str, str | None]:
    """The client every command of this replica goes through, how messages name it (no password) and how
    an operator checks it (None: ``redis-cli -u URL ping``). Nothing connects until the first command."""
    timeouts: dict[str, Any] = {"socket_timeout": settings.timeout, "socket_connect_timeout": settings.timeout}
    if not settings.sentinels:
        client = aioredis.from_url(  # type: ignore[no-untyped-call]
            settings.url, decode_responses=True, retry_on_timeout=False, health_check_interval=0, **timeouts)
        return client, public_url(settings.url), None
    sentinels = [sentinel_address(entry) for entry in settings.sentinels]
    master: dict[str, Any] = {"decode_responses": True, "retry_on_timeout": False, **timeouts}
    if settings.url != IN_PROCESS:  # the password, database and TLS of the master
        parts = urlsplit(settings.url)
        master.update({"password": parts.password, "username": parts.username or None,
                       "db": int(parts.path.strip("/") or 0), "ssl": parts.scheme == "rediss"})
    client = Sentinel(  # type: ignore[no-untyped-call]
        sentinels, sentinel_kwargs=dict(timeouts), **master).master_for(settings.sentinel_master)
    where = f"the master {settings.sentinel_master!r} of the Sentinels {', '.join(settings.sentinels)}"
    host, port = sentinels[0]
    check = (f"`redis-cli -h {host} -p {port} sentinel get-master-addr-by-name {settings.sentinel_master}` "
             "(then `redis-cli -h MASTER -p PORT ping`) and `[state] sentinels` in codeward.toml")
    return client, where, check
