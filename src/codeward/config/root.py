"""The whole configuration: one typed table per ``codeward.toml`` table.

:class:`Config` is what a loaded configuration is; every command builds from one, so a
setting means the same thing on ``serve``, ``gateway``, ``call`` and the agent.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import PrivateAttr

from codeward.config.agent import AgentSettings
from codeward.config.audit import AuditSettings
from codeward.config.base import Field, Table
from codeward.config.beads import BeadsSettings
from codeward.config.checkpoints import CheckpointSettings
from codeward.config.coding import CodingSettings
from codeward.config.index import IndexSettings
from codeward.config.lsp import LspSettings
from codeward.config.mcp import GatewayConfig
from codeward.config.model import ModelSettings
from codeward.config.network import NetworkSettings
from codeward.config.registry import RegistrySettings
from codeward.config.review import ReviewSettings
from codeward.config.sandbox import SandboxSettings
from codeward.config.server import ServerSettings
from codeward.config.shell import ShellSettings
from codeward.config.state import StateSettings
from codeward.config.web import WebSettings
from codeward.kernel.context import Settings


class Config(Table):
    """``codeward.toml`` (and the user file and environment beneath it), validated and immutable."""

    server: ServerSettings = Field(default_factory=ServerSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    beads: BeadsSettings = Field(default_factory=BeadsSettings)
    shell: ShellSettings = Field(default_factory=ShellSettings)
    network: NetworkSettings = Field(default_factory=NetworkSettings)
    coding: CodingSettings = Field(default_factory=CodingSettings)
    registry: RegistrySettings = Field(default_factory=RegistrySettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    checkpoints: CheckpointSettings = Field(default_factory=CheckpointSettings)
    lsp: LspSettings = Field(default_factory=LspSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    mcp: GatewayConfig = Field(default_factory=GatewayConfig)
    state: StateSettings = Field(default_factory=StateSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)

    _path: Path | None = PrivateAttr(default=None)
    _user_path: Path | None = PrivateAttr(default=None)

    @property
    def path(self) -> Path | None:
        """The project file (``codeward.toml`` or a ``--config`` file), if one was read."""
        return self._path

    @property
    def user_path(self) -> Path | None:
        """The user-level file, if one was read."""
        return self._user_path

    @property
    def base_dir(self) -> Path:
        """The project file's directory (or the working directory without one)."""
        return self._path.parent if self._path else Path.cwd()

    @property
    def roots(self) -> tuple[Path, ...]:
        return self.server.roots

    @property
    def blacklist(self) -> tuple[str, ...]:
        return self.server.blacklist

    @property
    def toolsets(self) -> tuple[str, ...] | None:
        return self.server.toolsets

    @property
    def settings(self) -> Settings:
        """How every call's output is bounded, as each tool context of this configuration carries it."""
        return Settings(output_cap_chars=self.server.output_cap_chars, spill_keep=self.server.spill_keep)

    def tables(self) -> tuple[Table, ...]:
        """Every table, for the typed slots of the services every call carries (``ctx.services.get(WebSettings)``)."""
        return tuple(getattr(self, name) for name in type(self).model_fields)
