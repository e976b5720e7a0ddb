"""Runs one registry tool's ``main`` — executed as a script in the tool's own interpreter.

This file is staged beside the tool's verified closure and started in the sandbox by the
subprocess primitive (``python -I -S -B runner.py``); it must use the standard library only:
codeward itself is not importable there. It reads one JSON object on stdin —
``{"params": {...}, "path": ..., "local": [...], "site": ...}`` — puts the tool's local
folders and its packages on the path *after* the standard library (a local module can never
stand in for a standard one), runs the staged tool file, calls ``main(**params)`` (awaiting it
if it is async), and writes one JSON object on stdout: ``{"ok": true, "result": ...}`` or
``{"ok": false, "error": ..., "message": ..., "traceback": ...}``. Whatever the tool prints
goes to stderr.
"""

import asyncio
import inspect
import json
import sys
import traceback
import types
from typing import IO, Any


def _answer(stream: IO[str], payload: dict[str, Any]) -> None:
    stream.write(json.dumps(payload))
    stream.flush()


def _failure(kind: str, message: str, tb: str = "") -> dict[str, Any]:
    return {"ok": False, "error": kind, "message": message, "traceback": tb}


def _run(request: dict[str, Any]) -> dict[str, Any]:
    path = request["path"]
    params = request.get("params") or {}
    if not isinstance(params, dict):
        return _failure("invalid_params", "params must be a JSON object")
    site = request.get("site")
    sys.path[:] = [p for p in sys.path if p] + list(request.get("local") or []) + ([site] if site else [])
    module = types.ModuleType("registry_tool")
    module.__file__ = path
    sys.modules["registry_tool"] = module
    with open(path, "rb") as handle:
        code = compile(handle.read(), path, "exec")
    exec(code, module.__dict__)
    main = getattr(module, "main", None)
    if not callable(main):
        return _failure("no_main", "the tool defines no main function")
    try:
        inspect.signature(main).bind(**params)
    except TypeError as exc:
        return _failure("invalid_params", f"main() does not accept these parameters: {exc}")
    result = main(**params)
    if inspect.isawaitable(result):
        async def wait() -> Any:
            return await result

        result = asyncio.run(wait())
    try:
        json.dumps(result)
    except (TypeError, ValueError) as exc:
        return _failure("result_not_json", f"main() returned a value that is not JSON-serializable: {exc}")
    return {"ok": True, "result": result}


def _tool_traceback(exc: BaseException, path: str) -> str:
    """The traceback from the tool's own frames on (the runner's frames are noise)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path] or \
        traceback.extract_tb(exc.__traceback__)[-3:]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames[-8:]),
             *traceback.format_exception_only(type(exc), exc)]
    return "".join(lines)


def main() -> None:
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    except ValueError as exc:
        _answer(real_stdout, _failure("bad_request", f"stdin is not a JSON request: {exc}"))
        return
    try:
        payload = _run(request)
    except BaseException as exc:  # the tool's own failure, reported as data
        payload = _failure(type(exc).__name__, str(exc), _tool_traceback(exc, request.get("path", "")))
    _answer(real_stdout, payload)


if __name__ == "__main__":
    main()
