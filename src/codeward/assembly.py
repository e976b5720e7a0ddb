"""The services one server or agent session shares, from the configuration.

Tools read their subsystem's settings from ``ctx.services`` (web limits and allowed hosts, the
Beads backend, the shell sandbox switch, execution, the registry, the review, the index, the language servers, the
call-metrics recorder). Each is the validated table of the loaded :class:`Config`, so the
surfaces (``serve``, ``gateway``, ``call``, ``chat``) all behave alike.
"""

from __future__ import annotations

from codeward.config import Config
from codeward.context import Services
from codeward.metrics import CallMetrics


def services_for(config: Config) -> Services:
    """The services of this configuration (with a fresh metrics recorder and fresh runtimes: the one
    code-execution runtime, made on first use, whose warm pool and sessions all the server's calls share)."""
    return Services(web=config.web, beads=config.beads, shell=config.shell, coding=config.coding,
                    registry=config.registry, review=config.review, index=config.index, lsp=config.lsp,
                    sandbox=config.sandbox,
                    metrics=CallMetrics())
