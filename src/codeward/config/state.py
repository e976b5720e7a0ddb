"""``[state]``: where an HTTP server keeps what several replicas must share (Redis, or this process)."""

from __future__ import annotations

from typing import ClassVar
from urllib.parse import urlsplit

from pydantic import field_validator

from codeward.config.base import Seconds, Str, Strings, Table

IN_PROCESS = "memory://"
REDIS_SCHEMES = ("redis", "rediss", "unix")


class StateSettings(Table):
    """The state backend of ``serve --http`` and ``gateway --http``: resumable-stream events, session
    metadata and in-flight calls. One machine needs nothing; replicas behind a load balancer share
    one Redis."""

    table_name: ClassVar[str] = "state"

    url: Str = IN_PROCESS
    """``memory://`` (this process only, the default) or ``redis://[:password@]host:port/db``
    (``rediss://`` for TLS, ``unix:///path/redis.sock``): every replica pointing at the same Redis
    resumes the others' streams. With ``sentinels`` set, only its password, database and scheme are
    used (the master's address comes from the Sentinels)."""
    sentinels: Strings = ()
    """Redis Sentinels (``["10.0.0.1:26379", "10.0.0.2:26379", ...]``) to ask for the current master of
    ``sentinel_master``: when the master fails and a Sentinel promotes a replica, every replica of this
    deployment follows it. Empty (the default): ``url`` names the one Redis."""
    sentinel_master: Str = "codeward"
    """The master's name in the Sentinels' configuration (``sentinel monitor <name> …``)."""
    key_prefix: Str = "codeward"
    """Prefix of every Redis key codeward writes (several deployments can share one Redis)."""
    timeout: Seconds = 2.0
    """Seconds to wait for Redis on one command; past it the call fails with an error naming Redis
    instead of hanging."""
    lease: Seconds = 3.0
    """Seconds without a heartbeat after which a call's replica is taken for dead and another
    replica may finish the call for a client that reconnects."""

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if value == IN_PROCESS:
            return value
        scheme = urlsplit(value).scheme
        if scheme not in REDIS_SCHEMES:
            raise ValueError(f"must be {IN_PROCESS!r} or a Redis URL (redis://host:6379/0, rediss://…, "
                             f"unix:///path/redis.sock), got scheme {scheme or '(none)'!r}")
        return value

    @field_validator("sentinels")
    @classmethod
    def _sentinels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            sentinel_address(entry)
        return value

    @field_validator("key_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not value or any(c.isspace() for c in value):
            raise ValueError("must be a non-empty string without spaces")
        return value

    @property
    def shared(self) -> bool:
        """Whether state lives outside this process (replicas can share it)."""
        return self.url != IN_PROCESS or bool(self.sentinels)


def sentinel_address(entry: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``) of one Sentinel; ValueError naming the expected form."""
    host, colon, port = entry.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"must list each Sentinel as host:port (Sentinel's default port is 26379, e.g. "
                         f"\"10.0.0.1:26379\"); {entry!r} is not")
    return host, int(port)
