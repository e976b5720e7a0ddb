"""Putting a server or a direct call together from the configuration.

Tools read their subsystem's settings from ``ctx.extras`` (web limits and allowed hosts, the
Beads backend, the shell sandbox switch, the call-metrics recorder). This module is the one
place that turns ``codeward.toml`` tables into those values, so the surfaces (``serve``,
``call``, ``gateway``, ``chat``) all behave alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from codeward.catalog import ToolOutcome
from codeward.config import Config, ConfigError
from codeward.metrics import EXTRAS_KEY as METRICS_KEY
from codeward.metrics import CallMetrics


def context_extras(config: Config) -> dict[str, Any]:
    """The extras every tool context of this configuration carries (a fresh metrics recorder too)."""
    from codeward.beads.tracker import EXTRAS_KEY as BEADS_KEY
    from codeward.beads.tracker import BeadsSettings
    from codeward.code.python_symbols import PARSE_CACHE_KEY, ParseCache
    from codeward.net.settings import EXTRAS_KEY as WEB_KEY
    from codeward.net.settings import WebSettings

    extras: dict[str, Any] = {METRICS_KEY: CallMetrics(), PARSE_CACHE_KEY: ParseCache()}
    extras[WEB_KEY] = _settings(config, "web", WebSettings, exclude={"resolver"})
    extras[BEADS_KEY] = _settings(config, "beads", BeadsSettings)
    extras["coding_settings"] = _coding_settings(config)
    from codeward.shell.settings import EXTRAS_KEY as SHELL_KEY
    from codeward.shell.settings import shell_settings_from_config

    extras[SHELL_KEY] = shell_settings_from_config(config)
    return extras


def _coding_settings(config: Config) -> Any:
    """Execution settings from the environment; ``coding_debug_code`` uses the configured model."""
    from dataclasses import replace

    from codeward.coding.runtime import CodingSettings
    from codeward.llm.profile import ModelConfigError, resolve_profile

    settings = CodingSettings.from_env()
    table = config.raw.get("coding", {})
    if isinstance(table, dict) and "allow_network" in table:
        if not isinstance(table["allow_network"], bool):
            raise ConfigError(f"{config.path.name if config.path else 'codeward.toml'}: [coding] allow_network must "
                              f"be true or false, got {table['allow_network']!r}")
        settings = replace(settings, allow_network=table["allow_network"])
    if settings.model is not None:
        return settings
    try:
        profile = resolve_profile(config.raw, None)
    except ModelConfigError:
        return settings
    return replace(settings, model_base_url=profile.base_url, model=profile.model, model_api_key=profile.api_key())


def metrics_observer(extras: Mapping[str, Any]) -> Any:
    """A server call observer that records every call into the extras' recorder."""
    recorder = extras[METRICS_KEY]

    def observe(name: str, arguments: Any, outcome: ToolOutcome) -> None:
        recorder.record(name, outcome.seconds, outcome.is_error)

    return observe


def _settings(config: Config, table_name: str, cls: type[Any], exclude: frozenset[str] | set[str] = frozenset()) -> Any:
    table = config.raw.get(table_name, {})
    where = f"{config.path.name if config.path else 'codeward.toml'}: [{table_name}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    known = {f.name: f for f in fields(cls) if f.name not in exclude}
    unknown = set(table) - set(known)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}; known: {sorted(known)}")
    values: dict[str, Any] = {}
    for key, value in table.items():
        default = getattr(cls(), key)
        if isinstance(default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where} {key} must be a list of strings, got {value!r}")
            value = tuple(value)
        elif isinstance(default, bool) != isinstance(value, bool) or (
            isinstance(default, (int, float)) and not isinstance(value, (int, float))
        ) or (isinstance(default, str) and not isinstance(value, str)):
            raise ConfigError(f"{where} {key} must be like {default!r}, got {value!r}")
        values[key] = value
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc
