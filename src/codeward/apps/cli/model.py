"""``codeward model serve-local``: the small local model as an OpenAI-compatible endpoint."""

from __future__ import annotations

import argparse
from typing import Any

from codeward.apps.cli.args import UsageError


def register(sub: Any) -> None:
    model = sub.add_parser("model", help="local model helpers")
    model_sub = model.add_subparsers(title="model commands", metavar="ACTION")
    local = model_sub.add_parser("serve-local", help="serve Qwen2.5-Coder-0.5B from PyPI packages (needs the "
                                 "local-model extra) as an OpenAI-compatible endpoint")
    local.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    local.add_argument("--threads", type=int, help="CPU threads (default: all cores but one)")
    local.add_argument("--ctx", type=int, default=16_384, metavar="TOKENS",
                       help="context window in tokens (default 16384, at most 32768; about 12 KB of memory a token)")
    local.set_defaults(handler=serve_local)


def serve_local(args: argparse.Namespace) -> int:
    from codeward.apps.agent.local_model import LocalModelUnavailable, WeightsMismatch
    from codeward.apps.agent.local_model import serve_local as serve

    try:
        return serve(args.port, threads=args.threads, n_ctx=args.ctx, echo=lambda line: print(line, flush=True))
    except (LocalModelUnavailable, WeightsMismatch) as exc:
        raise UsageError(str(exc)) from exc
