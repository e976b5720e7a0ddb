"""A run's way out through the egress proxy: the client's network namespace and a credential of its own.

Every executor that may reach the network by allowlist (``run_shell``/``run_tests``, processes, code
execution, registry tools) asks here with its name; the answer follows that executor's lists
(:meth:`~codeward.config.network.NetworkSettings.lists`). With domains allowed to it, the run joins
the client's loopback-only namespace (made if needed; code execution has one of its own, apart from
the dev servers of the client's processes), where the proxy listens, and gets a
:class:`~codeward.engines.sandbox.egress_proxy.EgressGrant`: the proxy variables with its own
credential, and the decisions on its connections alone for its result. Without, nothing: the caller
runs as it always did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from codeward.config.network import NetworkExecutor, NetworkSettings
from codeward.engines.sandbox.egress_policy import EgressPolicy
from codeward.kernel.result import Result

if TYPE_CHECKING:
    from codeward.engines.sandbox.egress_proxy import EgressGrant
    from codeward.engines.sandbox.shared_net import SharedNetwork
    from codeward.kernel.context import ToolContext

NO_SESSION_NOTE = ("network: none for this run: the egress proxy needs a client session (stdio, or an HTTP session "
                   "with an id)")


@dataclass
class ClientEgress:
    """Where a run's network comes from: the client's namespace (``None``: the run's own, empty one) and,
    when its executor has domains allowed, its admission to the proxy there."""

    network: SharedNetwork | None = None
    grant: EgressGrant | None = None

    def environment(self) -> dict[str, str]:
        """The proxy variables the run gets (none without a grant)."""
        return self.grant.environment() if self.grant is not None else {}

    def finish(self) -> list[str]:
        """The run ended: its credential is revoked; the notes on what it connected to."""
        if self.grant is None:
            return []
        self.grant.close()
        return self.grant.notes()


def client_egress(ctx: ToolContext, executor: NetworkExecutor, label: str, join: bool = False,
                  make: bool = False) -> Result[ClientEgress | None]:
    """``executor``'s way out for one run named ``label``: the client's namespace with a grant when the
    operator allows it some domain; else, when ``join`` (or ``make``), the namespace alone (a dev server
    started by a process is then reachable at 127.0.0.1, nothing outside is); else nothing."""
    from codeward.engines.shell.processes import process_table_of

    settings = ctx.services.get(NetworkSettings)
    proxied = settings.lists(executor).active
    if not (proxied or join or make):
        return Result.success(ClientEgress())
    found = process_table_of(ctx.services).network(ctx, make=make or proxied, code=executor == "code")
    if not found.ok:
        return found.cast(None)
    shared = found.data
    if shared is None:
        return Result(data=ClientEgress(), notes=[NO_SESSION_NOTE] if proxied else [])
    grant = shared.egress.admit(EgressPolicy.of(settings, executor), label) \
        if proxied and shared.egress is not None else None
    return Result.success(ClientEgress(shared, grant))
