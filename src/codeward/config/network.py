"""``[network]``: the domains sandboxed runs may reach through codeward's egress proxy.

With ``allowed_domains`` empty (the default) a run has no network at all, as before. With names
listed, ``run_shell``, ``run_tests`` and long-running processes get one way out: an HTTP proxy on
the host (CONNECT for https, forwarding for http) that checks each connection's name against
these lists and each address the name resolves to against the private ranges. The operator's
choice alone: no tool argument widens it.
"""

from __future__ import annotations

import ipaddress
import re
from typing import ClassVar

from pydantic import field_validator

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


class NetworkSettings(Table):
    """Which domains ``run_shell``, ``run_tests`` and long-running processes (``process_start``) reach through
    codeward's egress proxy, their only way out (see docs/sandbox.md, "Network by allowlist"); and which
    addresses those domains may resolve to."""

    table_name: ClassVar[str] = "network"

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
    hosts: dict[str, Str] = Field(default_factory=dict, json_schema_extra={"type_text": "table"})
    """Fixed addresses the proxy uses instead of DNS for some names, e.g. ``{ "pypi.internal" = "10.1.2.3" }``
    (the address checks still apply)."""

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

    @property
    def active(self) -> bool:
        """Whether runs get the proxy (some domain is allowed)."""
        return bool(self.allowed_domains)
