"""The SSRF guard: which network addresses a model-chosen URL may reach.

A URL is vetted before every connection, redirects included: its host is resolved once, every
address it resolves to must be public (or allowed by the operator), and the connection is then
made to that vetted address — so a DNS answer cannot change between the check and the connect
(DNS rebinding). Numeric hosts in decimal, hex, octal or shortened IPv4 notation are refused
outright: libraries disagree on how to read them, which is how guards are usually bypassed.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from codeward.config.web import WebSettings
from codeward.kernel.result import ErrorKind, Result

if TYPE_CHECKING:
    import httpx2

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack instance metadata
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "100.100.100.200",  # Alibaba Cloud metadata
        "168.63.129.16",  # Azure wireserver (a public address, so named explicitly)
    )
)
CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
ALLOWED_SCHEMES = frozenset({"http", "https"})
GUARD_HINT = (
    "fetch_url and web_search reach public internet addresses only (SSRF guard). If this internal "
    "host is intended, the operator can allow it in the web settings (allow_hosts)."
)
_HOST_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")
_DOTTED_QUAD = re.compile(r"^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$")


@dataclass(frozen=True, slots=True)
class Target:
    """A vetted destination: the host as named in the URL and the address to connect to."""

    scheme: str
    host: str
    port: int
    address: IPAddress


def forbidden_reason(address: IPAddress) -> str | None:
    """Why an address must not be reached (``"loopback"``, ``"private"``...), or ``None``."""
    if address in METADATA_ADDRESSES:
        return "cloud metadata"
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner = forbidden_reason(embedded)
            if inner:
                return f"{inner} (IPv4 {embedded} inside IPv6)"
    checks: tuple[tuple[bool, str], ...] = (
        (address.is_unspecified, "unspecified"),
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local"),
        (address.is_multicast, "multicast"),
        (isinstance(address, ipaddress.IPv4Address) and address in CGNAT, "carrier-grade NAT (shared)"),
        (address.is_reserved, "reserved"),
        (address.is_private, "private"),
        (not address.is_global, "special-purpose (non-public)"),
    )
    return next((reason for hit, reason in checks if hit), None)


def vet_url(raw: str, settings: WebSettings) -> Result[Target | None]:
    """Parse ``raw``, resolve its host and check every address; the target to connect to."""
    import httpx2

    early = _odd_ipv4_notation((urlsplit(raw).hostname or "") if isinstance(raw, str) else "")
    if early:
        return _odd_notation_refusal(raw, early)
    try:
        url = httpx2.URL(raw)
    except (httpx2.InvalidURL, TypeError) as exc:
        return _fail(ErrorKind.INVALID_INPUT, f"{raw!r} is not a valid URL: {exc}",
                     "Give an absolute URL such as https://example.com/page.")
    if url.scheme not in ALLOWED_SCHEMES:
        what = f"is a {url.scheme}: URL" if url.scheme else "is not an absolute URL"
        return _fail(ErrorKind.INVALID_INPUT, f"{raw!r} {what}; only http and https URLs can be fetched",
                     "Give an absolute URL starting with https:// or http://.")
    if not url.raw_host:
        return _fail(ErrorKind.INVALID_INPUT, f"{raw!r} has no host name",
                     "Give an absolute URL such as https://example.com/page.")
    if url.userinfo:
        return _fail(ErrorKind.INVALID_INPUT, f"{_redact(url)} embeds credentials (user:password@)",
                     "Remove the credentials from the URL; fetch_url does not send them.")
    host = url.raw_host.decode("ascii").lower().rstrip(".")
    port = url.port or (443 if url.scheme == "https" else 80)
    if _ip_literal(host) is None and not _HOST_NAME.match(host):
        return _fail(ErrorKind.INVALID_INPUT, f"{raw!r} is not a valid URL: host {host!r} has characters "
                     "not allowed in host names", "Check the URL for spaces or stray characters.")
    notation = _odd_ipv4_notation(host)
    if notation:
        return _odd_notation_refusal(raw, notation)
    addresses = _addresses(host, port, settings)
    if not addresses.ok:
        return addresses.cast(None)
    allowed_names, allowed_networks = _allowlist(settings)
    name_allowed = host in allowed_names
    for address in addresses.data:
        if name_allowed or any(address in network for network in allowed_networks):
            continue
        reason = forbidden_reason(address)
        if reason:
            via = "" if str(address) == host else f" resolves to {address}, which"
            return _fail(ErrorKind.PERMISSION,
                         f"{raw!r} is refused: {host}{via} is {_article(reason)} {reason} address", GUARD_HINT)
    return Result.success(Target(url.scheme, host, port, addresses.data[0]))


def _odd_notation_refusal(raw: str, notation: str) -> Result[Target | None]:
    return _fail(ErrorKind.PERMISSION, f"{raw!r} writes its IPv4 address in {notation}", GUARD_HINT
                 + " Public addresses work when written as four decimal numbers (93.184.216.34).")


def _addresses(host: str, port: int, settings: WebSettings) -> Result[list[IPAddress]]:
    literal = _ip_literal(host)
    if literal is not None:
        return Result.success([literal])
    try:
        if settings.resolver is not None:
            raw = list(settings.resolver(host, port))
        else:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            raw = [str(info[4][0]) for info in infos]
    except (OSError, UnicodeError) as exc:
        return Result.fail(ErrorKind.UNAVAILABLE, f"cannot resolve host {host!r}: {exc}",
                           "Check the spelling of the host name and that this machine has network access.",
                           data=[])
    found: list[IPAddress] = []
    for text in raw:
        address = _ip_literal(text.split("%", 1)[0])
        if address is not None and address not in found:
            found.append(address)
    if not found:
        return Result.fail(ErrorKind.UNAVAILABLE, f"host {host!r} resolves to no address",
                           "Check the host name.", data=[])
    return Result.success(found)


def _allowlist(settings: WebSettings) -> tuple[frozenset[str], tuple[IPNetwork, ...]]:
    names: set[str] = set()
    networks: list[IPNetwork] = []
    for entry in settings.allow_hosts:
        text = entry.strip().lower().strip("[]").rstrip(".")
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            names.add(text)
    return frozenset(names), tuple(networks)


def _odd_ipv4_notation(host: str) -> str | None:
    """Describe a numeric host that is not a plain dotted quad (``2130706433``, ``0x7f.1``)."""
    labels = host.split(".")
    if ":" in host or not _NUMERIC_LABEL.match(labels[-1]) or _DOTTED_QUAD.match(host):
        return None
    try:
        meant = socket.inet_ntoa(socket.inet_aton(host))
    except OSError:
        return "a numeric form that is not a valid IPv4 address"
    return f"a non-standard notation (decimal, hex, octal or shortened) that means {meant}"


def _ip_literal(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _redact(url: httpx2.URL) -> str:
    return str(url.copy_with(username=None, password=None))


def _fail(kind: ErrorKind, message: str, hint: str) -> Result[Target | None]:
    return Result.fail(kind, message, hint, data=None)
