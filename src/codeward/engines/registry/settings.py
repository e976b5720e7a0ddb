"""Where the registry keeps things and how long it lets tools run: the ``[registry]`` table.

The settings (:class:`codeward.config.RegistrySettings`) travel in the context's services
(``ctx.services.get(RegistrySettings)``); a context without them gets the defaults with the
environment's overrides (``CODEWARD_USER_AI_DIR``,
``CODEWARD_VENV_DIR``, ``CODEWARD_REGISTRY_HUB``), so a server started by a client picks them
up without a config file.
"""

from __future__ import annotations

from collections.abc import Mapping

from codeward.config.environment import variable_of
from codeward.config.registry import PROJECT_DIR_NAME, RegistrySettings
from codeward.engines.registry.keys import KeyStore
from codeward.kernel.user_dirs import data_home

USER_DIR_ENV = variable_of("registry", "user_dir")
VENV_DIR_ENV = variable_of("registry", "venv_dir")
HUB_DIR_ENV = variable_of("registry", "hub_dir")

__all__ = ["HUB_DIR_ENV", "PROJECT_DIR_NAME", "SIGNING_FOLDER", "USER_DIR_ENV", "VENV_DIR_ENV", "RegistrySettings",
           "key_store"]


SIGNING_FOLDER = "signing"
"""The folder of codeward's data home holding the signing key and the trusted keys."""


def key_store(settings: RegistrySettings, environ: Mapping[str, str] | None = None) -> KeyStore:
    """The user's signing key and the keys they trust (``signing/`` of codeward's data folder,
    ``~/.local/share/codeward/signing``, unless code set ``keys_dir``)."""
    return KeyStore(settings.keys_dir or data_home(environ) / SIGNING_FOLDER)
