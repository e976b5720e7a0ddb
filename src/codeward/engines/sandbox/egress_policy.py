"""What the egress proxy lets a sandboxed run reach: a name the operator allowed (``[network]``),
then every address that name resolves to, checked again — so a name whose DNS answer points at the
host's loopback, a private network or a cloud metadata service is refused (DNS rebinding) unless the
operator listed that address. Pure decisions; :mod:`.egress_proxy` applies them per connection.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from codeward.config.network import NetworkExecutor, NetworkSettings
from codeward.engines.net.guard import IPAddress, IPNetwork, forbidden_reason

CONFIG_FILE = "codeward.toml"


@dataclass(frozen=True)
class EgressPolicy:
    """One executor's lists, canonical (see :meth:`~codeward.config.network.NetworkSettings.lists`); ``table``
    is where an operator changes them (``network``, ``network.code``...), named in every refusal."""

    allowed: tuple[str, ...]
    denied: tuple[str, ...]
    addresses: tuple[IPNetwork, ...]
    hosts: dict[str, str]
    table: str = "network"

    @classmethod
    def of(cls, settings: NetworkSettings, executor: NetworkExecutor = "shell") -> EgressPolicy:
        lists = settings.lists(executor)
        networks = tuple(ipaddress.ip_network(entry.strip("[]"), strict=False) for entry in lists.allowed_addresses)
        return cls(lists.allowed_domains, lists.denied_domains, networks, dict(settings.hosts), lists.table)

    def refuse_name(self, host: str) -> str | None:
        """Why ``host`` (as the run named it) may not be reached, or ``None`` when its name is allowed."""
        name = host.strip().lower().rstrip(".")
        literal = _literal(name)
        if literal is not None:
            if any(literal in network for network in self.addresses):
                return None
            return (f"{host} is an IP address: runs reach named hosts only, through [{self.table}] allowed_domains "
                    f"(an operator who means this address can list it in [{self.table}] allowed_addresses in "
                    f"{CONFIG_FILE})")
        denied = _first_match(name, self.denied)
        if denied is not None:
            where = "[network]" if self.table == "network" else f"[network] (or [{self.table}])"
            return (f"{host} is refused by {where} denied_domains ({denied!r}) in {CONFIG_FILE}; "
                    "denied wins over allowed_domains")
        if _first_match(name, self.allowed) is None:
            return (f"{host} is not in [{self.table}] allowed_domains; an operator can allow it by adding "
                    f"\"{name}\" to [{self.table}] allowed_domains in {CONFIG_FILE}")
        return None

    def refuse_address(self, host: str, address: IPAddress) -> str | None:
        """Why ``address`` (what ``host`` resolved to) may not be reached, or ``None``."""
        if any(address in network for network in self.addresses):
            return None
        reason = forbidden_reason(address)
        if reason is None:
            return None
        article = "an" if reason[0] in "aeiou" else "a"
        return (f"{host} resolves to {address}, {article} {reason} address: refused before connecting (a name may not "
                f"lead into the host or its networks); an operator who means it can list {address} in "
                f"[{self.table}] allowed_addresses in {CONFIG_FILE}")

    def fixed_address(self, host: str) -> IPAddress | None:
        """The address ``[network] hosts`` gives ``host`` (or the address ``host`` is), else ``None``."""
        name = host.strip().lower().rstrip(".")
        return _literal(self.hosts.get(name, name))


def _literal(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def _first_match(name: str, patterns: Sequence[str]) -> str | None:
    """The first pattern naming ``name``: exactly, or ``*.suffix`` for any name below ``suffix``."""
    for pattern in patterns:
        if pattern.startswith("*."):
            if name.endswith(pattern[1:]):
                return pattern
        elif name == pattern:
            return pattern
    return None
