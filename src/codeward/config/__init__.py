"""codeward's configuration: one typed model, one table per concern, found and merged in one place.

``codeward.toml`` (the nearest one from the working directory up to the repository root, or
``--config FILE``, which may also be a Claude-Desktop ``mcpServers`` JSON file), under it the
user file ``$XDG_CONFIG_HOME/codeward/config.toml``, over both the documented environment
variables. :func:`load_config` returns the validated, immutable :class:`Config`; each
subsystem reads its own table from it (``config.shell`` is the :class:`ShellSettings` the
shell runner uses). ``docs/configuration.md`` lists every key.
"""

from codeward.config.agent import AgentSettings
from codeward.config.base import expand_env
from codeward.config.beads import BeadsSettings
from codeward.config.coding import CodingSettings
from codeward.config.errors import ConfigError
from codeward.config.files import CONFIG_NAME, find_project_config, user_config_path
from codeward.config.index import IndexSettings
from codeward.config.loader import defaults_with_environment, load_config
from codeward.config.lsp import LspSettings
from codeward.config.mcp import GatewayConfig, ServerConfig
from codeward.config.model import ModelConfigError, ModelProfile, ModelSettings
from codeward.config.registry import RegistrySettings
from codeward.config.review import ReviewSettings
from codeward.config.root import Config
from codeward.config.sandbox import SandboxSettings
from codeward.config.server import ServerSettings
from codeward.config.shell import ShellSettings
from codeward.config.web import WebSettings

find_config = find_project_config

__all__ = [
    "CONFIG_NAME", "AgentSettings", "BeadsSettings", "CodingSettings", "Config", "ConfigError", "GatewayConfig",
    "IndexSettings", "LspSettings", "ModelConfigError", "ModelProfile", "ModelSettings", "RegistrySettings",
    "ReviewSettings", "SandboxSettings", "ServerConfig", "ServerSettings", "ShellSettings", "WebSettings",
    "defaults_with_environment",
    "expand_env", "find_config", "find_project_config", "load_config", "user_config_path",
]
