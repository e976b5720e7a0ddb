"""``[network]``: the domains sandboxed runs may reach through codeward's egress proxy, per executor.

With ``allowed_domains`` empty (the default) a run has no network at all, as before. With names
listed, ``run_shell``, ``run_tests`` and long-running processes get one way out: an HTTP proxy on
the host (CONNECT for https, forwarding for http) that checks each connection's name against
these lists and each address the name resolves to against the private ranges.

An executor's own table (``[network.shell]``, ``[network.processes]``, ``[network.code]``,
``[network.registry]``) replaces the top-level lists for it; code execution and registry tools
get network only from their own table, so a configuration written before those tables existed
never gives them a way out. ``denied_domains`` of ``[network]`` applies to every executor. The
operator's choice alone: no tool argument widens any list.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import field_validator, model_validator

from codeward.config.base import ADDITIVE, Field, Str, Strings, Table

_LABELS = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")


def domain_pattern(entry: str) -> str:
    """``entry`` as a canonical pattern (lower case, no trailing dot); raises ``ValueError``."""
    text = entry.strip().lower().rstrip(".")
    name = text.removeprefix("*.")
    if text == "*" or not name:
        raise ValueError(f"{entry!r} would allow every domain; list the domains, or give the run the whole network "
                         "with [shell] network = true")
    if "*" in name:
        raise ValueError(f"{entry!r}: a wildcard is allowed only as the first label, as in \"*.pypi.org\"")
    if _is_address(name):
        raise ValueError(f"{entry!r} is an IP address, not a domain; list addresses in [network] allowed_addresses")
    if not _LABELS.match(name):
        raise ValueError(f"{entry!r} is not a domain name (letters, digits, '-', '_' and dots, like \"pypi.org\")")
    return text


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


NetworkExecutor = Literal["shell", "processes", "code", "registry"]
EXECUTORS: dict[NetworkExecutor, str] = {
    "shell": "run_shell and run_tests",
    "processes": "long-running processes",
    "code": "code execution",
    "registry": "registry tools",
}
"""The executors that may have a ``[network.NAME]`` table of their own, and what each covers."""
INHERITING = frozenset({"shell", "processes"})
"""The executors the top-level ``[network]`` lists cover when they have no table of their own."""


class DomainLists(Table):
    """The lists every ``[network]`` table has: the domains allowed and refused, the addresses allowed."""

    allowed_domains: Strings = ()
    """Domains runs may connect to through the proxy: ``"pypi.org"`` exactly, ``"*.pythonhosted.org"`` any
    name under it (not the name itself). Empty: runs have no network. Ignored when a run gets the whole network
    (``[shell] network = true``)."""
    denied_domains: Strings = Field(default=(), json_schema_extra={ADDITIVE: True})
    """Domains refused even when ``allowed_domains`` matches them (denied wins), with the same wildcards."""
    allowed_addresses: Strings = ()
    """IP addresses or networks (``10.1.2.3``, ``10.0.0.0/8``) an allowed domain may resolve to although they
    are loopback, private, link-local or metadata addresses (an internal package mirror). Every other such
    address is refused after resolution, whatever the name (DNS rebinding); so is a run naming an IP
    address itself, unless it is listed here."""

    @field_validator("allowed_domains", "denied_domains")
    @classmethod
    def _domains(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(domain_pattern(entry) for entry in value)

    @field_validator("allowed_addresses")
    @classmethod
    def _addresses(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            try:
                ipaddress.ip_network(entry.strip("[]"), strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or network (like \"10.1.2.3\" or "
                                 "\"10.0.0.0/8\")") from None
        return value


class ExecutorNetwork(DomainLists):
    """One executor's own lists (``[network.shell]``, ``[network.processes]``, ``[network.code]``,
    ``[network.registry]``): they replace the top-level ``[network]`` lists for that executor
    (``[network] denied_domains`` still applies). ``shell`` covers ``run_shell`` and ``run_tests``;
    ``processes`` long-running processes; ``code`` the code-running tools (``coding_execute_code``...);
    ``registry`` registry tools. Code execution and registry tools have network only through their own table."""


@dataclass(frozen=True)
class EffectiveLists:
    """What one executor may reach, and the table an operator edits to change it."""

    table: str
    allowed_domains: tuple[str, ...]
    denied_domains: tuple[str, ...]
    allowed_addresses: tuple[str, ...]

    @property
    def active(self) -> bool:
        return bool(self.allowed_domains)


_SUB_TABLE: dict[str, Any] = {"type_text": "table"}


class NetworkSettings(DomainLists):
    """Which domains ``run_shell``, ``run_tests`` and long-running processes (``process_start``) reach through
    codeward's egress proxy, their only way out (see docs/sandbox.md, "Network by allowlist"); and which
    addresses those domains may resolve to. ``[network.EXECUTOR]`` tables give an executor lists of its own."""

    table_name: ClassVar[str] = "network"

    hosts: dict[str, Str] = Field(default_factory=dict, json_schema_extra={"type_text": "table"})
    """Fixed addresses the proxy uses instead of DNS for some names, e.g. ``{ "pypi.internal" = "10.1.2.3" }``
    (the address checks still apply). For every executor."""
    shell: ExecutorNetwork | None = Field(default=None, json_schema_extra=_SUB_TABLE)
    """``[network.shell]``: run_shell's and run_tests' own lists."""
    processes: ExecutorNetwork | None = Field(default=None, json_schema_extra=_SUB_TABLE)
    """``[network.processes]``: long-running processes' own lists."""
    code: ExecutorNetwork | None = Field(default=None, json_schema_extra=_SUB_TABLE)
    """``[network.code]``: code execution's lists (without this table it has no proxy)."""
    registry: ExecutorNetwork | None = Field(default=None, json_schema_extra=_SUB_TABLE)
    """``[network.registry]``: registry tools' lists (without this table they have no proxy)."""

    @model_validator(mode="before")
    @classmethod
    def _executor_tables(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for key, value in data.items():
                if isinstance(value, Mapping) and key != "hosts" and key not in EXECUTORS:  # type: ignore[comparison-overlap]
                    names = "; ".join(f"[network.{name}] for {what}" for name, what in EXECUTORS.items())
                    raise ValueError(f"[network.{key}] is not an executor's table; the executors' tables are {names}")
        return data

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, value: dict[str, str]) -> dict[str, str]:
        fixed: dict[str, str] = {}
        for name, address in value.items():
            if not _is_address(address):
                raise ValueError(f"{name} = {address!r}: the address is not an IP address")
            fixed[domain_pattern(name)] = address.strip("[]")
        if any(name.startswith("*.") for name in fixed):
            raise ValueError("names wildcards; give each name its own address")
        return fixed

    def lists(self, executor: NetworkExecutor) -> EffectiveLists:
        """The lists ``executor`` runs under: its own table's, else (shell and processes only) the top-level
        ones, else nothing; ``[network] denied_domains`` always added."""
        own: ExecutorNetwork | None = getattr(self, executor)
        if own is not None:
            denied = tuple(dict.fromkeys((*self.denied_domains, *own.denied_domains)))
            return EffectiveLists(f"network.{executor}", own.allowed_domains, denied, own.allowed_addresses)
        if executor in INHERITING:
            return EffectiveLists("network", self.allowed_domains, self.denied_domains, self.allowed_addresses)
        return EffectiveLists(f"network.{executor}", (), self.denied_domains, ())

    @property
    def active(self) -> bool:
        """Whether some executor gets the proxy (some domain is allowed to it)."""
        return any(self.lists(executor).active for executor in EXECUTORS)
