"""Putting a server or a direct call together from the configuration.

Tools read their subsystem's settings from ``ctx.extras`` (web limits and allowed hosts, the
Beads backend, the shell sandbox switch, execution, the registry, the review, the
call-metrics recorder). Each is the validated table of the loaded :class:`Config`, so the
surfaces (``serve``, ``call``, ``gateway``, ``chat``) all behave alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codeward.catalog import ToolOutcome
from codeward.config import Config
from codeward.metrics import EXTRAS_KEY as METRICS_KEY
from codeward.metrics import CallMetrics


def context_extras(config: Config) -> dict[str, Any]:
    """The extras every tool context of this configuration carries (a fresh metrics recorder too,
    and the one code-execution runtime whose warm pool and sessions all the server's calls share)."""
    from codeward.beads.tracker import EXTRAS_KEY as BEADS_KEY
    from codeward.code.python_symbols import PARSE_CACHE_KEY, ParseCache
    from codeward.code.symbol_index import EXTRAS_KEY as INDEX_KEY
    from codeward.coding.review.runner import REVIEW_EXTRAS_KEY
    from codeward.coding.runtime import RUNTIME_KEY, CodingRuntime
    from codeward.coding.runtime import SETTINGS_KEY as CODING_KEY
    from codeward.net.settings import EXTRAS_KEY as WEB_KEY
    from codeward.registry.settings import EXTRAS_KEY as REGISTRY_KEY
    from codeward.shell.settings import EXTRAS_KEY as SHELL_KEY

    return {METRICS_KEY: CallMetrics(), PARSE_CACHE_KEY: ParseCache(), WEB_KEY: config.web, BEADS_KEY: config.beads,
            CODING_KEY: config.coding, SHELL_KEY: config.shell, REGISTRY_KEY: config.registry,
            REVIEW_EXTRAS_KEY: config.review, INDEX_KEY: config.index,
            RUNTIME_KEY: CodingRuntime(config.coding)}


def metrics_observer(extras: Mapping[str, Any]) -> Any:
    """A server call observer that records every call into the extras' recorder."""
    recorder = extras[METRICS_KEY]

    def observe(name: str, arguments: Any, outcome: ToolOutcome) -> None:
        recorder.record(name, outcome.seconds, outcome.is_error)

    return observe
