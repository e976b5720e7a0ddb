"""The coding tools' failures in the shape Codomyrmex's callers read.

The seed's analysis, report, debugging and monitoring tools answer a failure with ``{"success": false,
"error": "<what> failed: <details>"}``, its Docker run adds ``"status": "setup_error"``, and its code
execution always returns its whole record, with ``status`` saying ``setup_error`` when the code could not
run. codeward keeps its own error text (the kind, the message, the hint) and marks the call an error; this
is the structured content beside it, so a script written against the seed's results reads a failure the
same way (``structuredContent``; MCP clients validate a result against the output schema only on success).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from codeward.kernel.catalog import FailureShape
from codeward.kernel.result import Result


def failed(what: str, status: str | None = None) -> FailureShape:
    """``{"success": false, "error": "<what> failed: <message>"}`` (plus ``status``), over the fields of the
    record the tool returned with its failure, if any (code execution's ``status: setup_error`` and the rest)."""

    def shape(result: Result[Any]) -> dict[str, Any]:
        message = "; ".join(error.message for error in result.errors) or "unknown error"
        record = result.data.model_dump(mode="json") if isinstance(result.data, BaseModel) else {}
        shaped: dict[str, Any] = {**record, "success": False, "error": f"{what} failed: {message}"}
        if status is not None and "status" not in record:
            shaped["status"] = status
        return shaped

    return shape
