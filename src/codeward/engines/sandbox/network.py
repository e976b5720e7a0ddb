"""Network for a sandboxed run — the internet, not the host or its neighbours.

When the operator allows a run the network, it does not get the host's: it gets a network
namespace of its own, connected to the outside by ``slirp4netns`` (user-mode networking: the
run's packets become ordinary sockets of an unprivileged process on the host) with
``--disable-host-loopback``, so nothing listening on the host's ``127.0.0.1`` can be reached.
Inside the namespace, before the program starts, "unreachable" routes cover the private and
reserved ranges (RFC 1918, link-local with cloud metadata at 169.254.169.254, carrier-grade
NAT, documentation and benchmark nets, multicast) and every network the host itself is on, so
the host's other addresses and its neighbours are out of reach too; only slirp's own
``10.0.2.0/24`` (its DNS forwarder at 10.0.2.3; the gateway 10.0.2.2 refuses, being the host's
loopback) stays routed. The program has no capability to change the routes.

A run may be narrowed to a few hosts (``SandboxRequest.network_hosts``, what a registry tool
declares and the operator allows): then the default route goes too, only those hosts' public
addresses are routed, slirp's DNS is unreachable and the names are in the run's ``/etc/hosts``.

The mechanism, in the child between fork and exec (after the overlay mounts, when there are
any): enter a new network namespace (owned by the child's user namespace), then exec a tiny
``sh`` that waits on a pipe while the parent attaches slirp4netns, sets the routes with
``ip`` (as root of its own namespace), and execs bwrap, which shares that namespace.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SLIRP_CIDR = "10.0.2.0/24"
SLIRP_DNS = "10.0.2.3"
BLOCKED_RANGES: tuple[str, ...] = (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
    "224.0.0.0/4", "240.0.0.0/4",
)
"""Never routed from a sandbox with network: private, shared, link-local, reserved, multicast."""
ATTACH_TIMEOUT_S = 10.0
SLIRP_GATEWAY = "10.0.2.2"
RESOLV_CONF = f"nameserver {SLIRP_DNS}\n"
NO_DNS = "# no DNS: the hosts this run may reach are listed in /etc/hosts\n"
WRAPPER = 'read -r _ <&{fd} || exit 125; exec {fd}<&-; {ip} -batch {routes} >&2 || exit 125; exec "$@"'
"""Waits for the parent's go, sets the routes, then becomes the sandbox (bwrap)."""


def network_unavailable() -> str | None:
    """``None`` when an isolated network can be given here, else what is missing."""
    missing = [tool for tool in ("slirp4netns", "ip") if _which(tool) is None]
    if missing:
        return (f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed "
                "(Debian: apt-get install slirp4netns iproute2)")
    return None


def _routable(address: str) -> bool:
    """A public IPv4 address (the only kind a narrowed network routes)."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return parsed.version == 4 and parsed.is_global


def _which(tool: str) -> str | None:
    return shutil.which(tool) or next((p for p in (f"/usr/bin/{tool}", f"/usr/sbin/{tool}", f"/sbin/{tool}")
                                       if os.access(p, os.X_OK)), None)


def blocked_networks() -> list[str]:
    """:data:`BLOCKED_RANGES` plus every IPv4 network the host has an address on."""
    found = list(BLOCKED_RANGES)
    try:
        import psutil

        for addresses in psutil.net_if_addrs().values():
            for address in addresses:
                if address.family.name == "AF_INET" and address.address:
                    found.append(f"{address.address}/32")
                    if address.netmask:
                        network = ipaddress.ip_network(f"{address.address}/{address.netmask}", strict=False)
                        found.append(str(network))
    except (ImportError, OSError, ValueError):
        pass
    return list(dict.fromkeys(found))


@dataclass
class IsolatedNetwork:
    """Files and pipes of one run's network; :meth:`attach` once the child exists."""

    base: Path
    routes_file: Path
    resolv_conf: Path
    hosts_file: Path | None
    go_read: int
    go_write: int
    slirp: subprocess.Popen[bytes] | None = None
    exit_write: int | None = None
    notes: list[str] = field(default_factory=list)

    @classmethod
    def prepare(cls, hosts: Mapping[str, Sequence[str]] | None = None) -> IsolatedNetwork:
        """Write the routes and resolv.conf, open the go pipe; raises ``OSError``.

        With ``hosts`` (name → addresses) only those addresses are routed: the default route is
        removed, slirp's DNS forwarder made unreachable, and the names written to an
        ``/etc/hosts`` of the run's own, so nothing else — not even a DNS query — leaves it."""
        base = Path(tempfile.mkdtemp(prefix="codeward-net-"))
        try:
            routes = base / "routes"
            lines = ["link set lo up"] + [
                f"route add unreachable {network}" for network in blocked_networks()
                if not ipaddress.IPv4Network(network).subnet_of(ipaddress.IPv4Network(SLIRP_CIDR))]
            hosts_file = None
            if hosts is not None:
                addresses = sorted({a for found in hosts.values() for a in found if _routable(a)})
                lines += ["route del default", f"route add unreachable {SLIRP_DNS}/32",
                          *(f"route add {address}/32 via {SLIRP_GATEWAY}" for address in addresses)]
                hosts_file = base / "hosts"
                hosts_file.write_text("127.0.0.1 localhost\n" + "".join(
                    f"{address} {name}\n" for name, found in sorted(hosts.items()) for address in found
                    if _routable(address)))
            routes.write_text("".join(f"{line}\n" for line in lines))
            resolv = base / "resolv.conf"
            resolv.write_text(RESOLV_CONF if hosts is None else NO_DNS)
            for path in (base, routes, resolv, *([hosts_file] if hosts_file else [])):
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
            go_read, go_write = os.pipe()
        except BaseException:
            shutil.rmtree(base, ignore_errors=True)
            raise
        return cls(base, routes, resolv, hosts_file, go_read, go_write)

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` behind the shell that waits for the network and sets the routes."""
        script = WRAPPER.format(fd=self.go_read, routes=self.routes_file, ip=_which("ip") or "ip")
        return [_which("bash") or "/bin/bash", "-c", script, "codeward-net", *argv]

    def attach(self, pid: int, timeout_s: float = ATTACH_TIMEOUT_S) -> None:
        """Connect the child's network namespace to slirp4netns, then let the child go on."""
        slirp = _which("slirp4netns")
        if slirp is None:
            raise OSError("slirp4netns is not installed")
        ready_read, ready_write = os.pipe()
        exit_read, exit_write = os.pipe()
        try:
            self.slirp = subprocess.Popen(
                [slirp, "--configure", "--mtu=65520", "--disable-host-loopback", f"--cidr={SLIRP_CIDR}",
                 f"--ready-fd={ready_write}", f"--exit-fd={exit_read}", f"--userns-path=/proc/{pid}/ns/user",
                 "--netns-type=path", f"/proc/{pid}/ns/net", "tap0"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=(ready_write, exit_read), start_new_session=True)
        finally:
            os.close(ready_write)
            os.close(exit_read)
        self.exit_write = exit_write
        try:
            ready, _, _ = select.select([ready_read], [], [], timeout_s)
            if not ready or os.read(ready_read, 1) != b"1":
                raise OSError(f"slirp4netns did not start: {self._slirp_error()}")
        finally:
            os.close(ready_read)
        os.write(self.go_write, b"go\n")
        os.close(self.go_write)
        self.go_write = -1

    def _slirp_error(self) -> str:
        if self.slirp is None:
            return "not started"
        deadline = time.monotonic() + 1
        while self.slirp.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.slirp.poll() is None or self.slirp.stderr is None:
            return "no answer"
        return self.slirp.stderr.read().decode("utf-8", "replace").strip()[-300:] or "it exited"

    def close(self) -> None:
        """Stop slirp4netns and remove the files (the namespace goes with the run)."""
        for fd in (self.go_read, self.go_write, self.exit_write):
            if fd is not None and fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.go_read = self.go_write = -1
        self.exit_write = None
        if self.slirp is not None:
            try:
                self.slirp.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.slirp.kill()
                self.slirp.wait()
            if self.slirp.stderr is not None:
                self.slirp.stderr.close()
            self.slirp = None
        shutil.rmtree(self.base, ignore_errors=True)
