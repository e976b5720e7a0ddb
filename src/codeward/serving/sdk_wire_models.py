"""The SDK's per-era wire models: their validators built on first use, not at import.

The ``mcp`` SDK validates every message against a generated pydantic model of its shape in the
session's protocol era (``mcp_types._v2025_11_25`` and ``mcp_types._v2026_07_28``, about 300
models on one base, ``WireModel``). Importing the SDK builds every one of their validators,
a third of the SDK's import and of a server's start-up, yet a session meets a dozen of them:
the messages of one era that it really sends and receives.

Pydantic's ``defer_build`` makes a model build its validator when it first validates or
serializes, with the same schema (tested: every wire model's JSON schema is the same either
way). A model takes it from its bases when it is defined, so it is set on ``WireModel`` before
the era packages are imported. A serving command calls :func:`defer_wire_models` first thing;
when the SDK's layout is not the one this expects (the base moved or was renamed) or the era
packages are already imported, nothing changes and the SDK builds them at import, as before.
"""

from __future__ import annotations

import sys
from importlib import import_module

ERA_PACKAGES = ("mcp_types._v2025_11_25", "mcp_types._v2026_07_28")
"""The SDK's generated wire-model packages, one per protocol era."""
BASE_MODULE = "mcp_types._wire_base"


def defer_wire_models() -> bool:
    """Have pydantic build the SDK's wire models on first use; False when it cannot here.

    Call it before anything imports ``mcp``; importing the base imports ``mcp_types`` (which a
    serving command imports anyway), not the era packages.
    """
    if any(name in sys.modules for name in ERA_PACKAGES):
        return False
    try:
        base = getattr(import_module(BASE_MODULE), "WireModel", None)
    except ImportError:
        return False
    from pydantic import BaseModel

    if not (isinstance(base, type) and issubclass(base, BaseModel)) or base.__subclasses__():
        return False
    base.model_config = {**base.model_config, "defer_build": True}
    return True


__all__ = ["BASE_MODULE", "ERA_PACKAGES", "defer_wire_models"]
