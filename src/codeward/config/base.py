"""What every configuration table shares: frozen, unknown keys refused, strict scalar types.

A table is a pydantic model; the subsystem that reads it uses that same object as its
settings, so a default is written once. Values come from a file, the environment or code;
validation is told which through its context (:class:`Origin`), so a key that only code may
set (a test's DNS resolver, an API key) is refused in a file, and relative paths are taken
from the directory of the file that holds them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
)
from pydantic import Field as Field

from codeward.config.environment import environment_tables

T = TypeVar("T", bound="Table")

Origin = Literal["project", "user", "environment", "json"]
"""Where values being validated come from; code constructing a table passes no context."""

FILE_ORIGINS = ("project", "user", "json")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
CODE_ONLY = "code_only"
"""Marker in a field's ``json_schema_extra``: set by code, never by a configuration file."""
PROJECT_ONLY = "project_only"
"""Marker: only a project's ``codeward.toml`` may set it (roots belong to a project)."""
ADDITIVE = "additive"
"""Marker: the user file's entries and the project's are joined, not replaced (protections add up)."""


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace ``${VAR}`` with the environment's value (empty when unset)."""
    env = os.environ if environ is None else environ
    return _ENV_REF.sub(lambda m: env.get(m.group(1), ""), value)


def origin_of(info: ValidationInfo) -> Origin | None:
    context = info.context if isinstance(info.context, Mapping) else {}
    value = context.get("origin")
    return value if value in ("project", "user", "environment", "json") else None  # type: ignore[return-value]


def base_dir_of(info: ValidationInfo) -> Path | None:
    context = info.context if isinstance(info.context, Mapping) else {}
    base = context.get("base_dir")
    return Path(base) if base is not None else None


def _path(value: Any, info: ValidationInfo) -> Any:
    """``${VAR}`` and ``~`` expanded; a relative path taken from the file's directory."""
    if not isinstance(value, str | Path):
        return value
    text = expand_env(str(value))
    if not text:
        raise ValueError("must be a non-empty path")
    path = Path(text).expanduser()
    base = base_dir_of(info)
    if not path.is_absolute() and base is not None:
        path = base / path
    return path.resolve() if path.is_absolute() else path


def _positive(value: float) -> float:
    if value <= 0:
        raise ValueError("must be above 0")
    return value


EnvStr = Annotated[StrictStr, AfterValidator(expand_env)]
"""A string in which ``${VAR}`` is replaced by the environment's value."""
ConfigPath = Annotated[Path, BeforeValidator(_path)]
"""A path: ``${VAR}`` and ``~`` expanded, relative to the file that gives it."""
Seconds = Annotated[float, Field(strict=True), AfterValidator(_positive)]
"""A positive number of seconds (an integer is fine)."""
Strings = tuple[StrictStr, ...]
Bool = StrictBool
Int = StrictInt
Str = StrictStr


class Table(BaseModel):
    """A configuration table: immutable, unknown keys refused.

    A field's docstring (the string under it) documents the key; :mod:`codeward.config.reference`
    reads them from the source when it writes the reference, so importing costs nothing for them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True, populate_by_name=True,
                              defer_build=True)
    """``defer_build``: a table's validator is built when a value is first validated, so a command
    run with no configuration file and no override variable (a server an agent starts) never
    builds one (see :func:`defaults`)."""

    table_name: ClassVar[str] = ""
    """The table's name in ``codeward.toml`` (``coding`` for ``[coding]``), for a table some environment
    variable overrides (:mod:`codeward.config.environment`)."""

    @classmethod
    def unconfigured(cls) -> Self:
        """This table for a context built without a configuration (a test, a script): the defaults with the
        environment's overrides (``CODEWARD_SANDBOX``...), as a loaded configuration has them. What
        ``ctx.services.get(...)`` gives for a table the services were not built with."""
        values = environment_tables().get(cls.table_name, {}) if cls.table_name else {}
        if not values:
            return defaults(cls)
        return cls.model_validate(values, context={"origin": "environment", "base_dir": Path.cwd()})

    @field_validator("*", mode="before")
    @classmethod
    def _code_only(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        extra = field.json_schema_extra if field is not None else None
        if isinstance(extra, dict) and extra.get(CODE_ONLY) and origin_of(info) in FILE_ORIGINS:
            raise ValueError(str(extra.get("reason") or "is set by code, not in a configuration file"))
        return value

    @classmethod
    def config_keys(cls) -> tuple[str, ...]:
        """The keys a configuration file may write in this table."""
        keys: list[str] = []
        for name, info in cls.model_fields.items():
            extra = info.json_schema_extra
            if isinstance(extra, dict) and extra.get(CODE_ONLY):
                continue
            keys.append(info.alias or name)
        return tuple(keys)


def defaults(model: type[T]) -> T:
    """A table holding only its defaults, its nested tables too, without validating (and so without
    building a validator): what ``model()`` gives, as defaults are not validated."""
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        factory = info.default_factory
        if isinstance(factory, type) and issubclass(factory, Table):
            values[name] = defaults(factory)
    return model.model_construct(_fields_set=set(), **values)


def code_only(default: Any = None, reason: str = "") -> Any:
    """A field code sets (a callback, a secret read from the environment), refused in files."""
    return Field(default=default, exclude=True, json_schema_extra={CODE_ONLY: True, "reason": reason})


def marked(info: Any, marker: str) -> bool:
    extra = getattr(info, "json_schema_extra", None)
    return isinstance(extra, dict) and bool(extra.get(marker))


__all__ = ["ADDITIVE", "CODE_ONLY", "PROJECT_ONLY", "Bool", "ConfigPath", "EnvStr", "Field", "Int", "Origin",
           "Seconds", "Str", "Strings", "Table", "base_dir_of", "code_only", "defaults", "expand_env", "marked",
           "origin_of"]
