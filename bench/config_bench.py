"""What loading the typed configuration costs a command, against reading the same TOML bare.

Every command loads the configuration once at start-up, so its price is paid per command. In
one run, over a realistic ``codeward.toml`` (every table, two profiles, three servers) plus a
user file, we time:

* baseline — ``tomllib.loads`` of both files (what any TOML-reading tool pays);
* load — ``load_config``: discovery upward, both files read, every layer validated and
  merged, the environment applied;
* import — a fresh interpreter importing ``codeward.config`` against one importing
  ``tomllib`` only (the models are built at import).

    .venv/bin/python bench/config_bench.py [--rounds 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codeward.config import load_config

PROJECT = """
[server]
roots = ["."]
blacklist = ["*.sqlite", "secrets/"]
toolsets = ["files", "python", "analysis", "shell"]
output_cap_tokens = 20000

[web]
allow_hosts = ["127.0.0.1", "10.0.0.0/8"]

[shell]
sandbox = true
pass_env = ["LANG"]
qa_on_failure = true
qa_model = "local"

[coding]
backend = "bwrap"
pool_size = 1

[registry]
hub_dir = "hub"

[review]
timeout_seconds = 300
executables = { mypy = ".venv/bin/mypy" }

[index]
ctags = true

[agent]
context_budget_tokens = 16000

[model]
default = "local"

[model.profiles.local]
base_url = "http://127.0.0.1:8080/v1"
model = "qwen2.5-coder-0.5b"
max_tokens = 2048

[mcp]
auto_approve = ["git__git_status", "time__*"]
pin = "warn"

[mcp.servers.git]
command = "uvx"
args = ["mcp-server-git", "--repository", "."]

[mcp.servers.time]
command = "uvx"
args = ["mcp-server-time"]

[mcp.servers.docs]
url = "https://docs.example.com/mcp"
auth_env = "DOCS_TOKEN"
"""

USER = """
[model.profiles.cloud]
base_url = "https://openrouter.ai/api/v1"
model = "qwen/qwen3-coder"
key_env = "OPENROUTER_API_KEY"

[server]
blacklist = ["*.key"]
"""


def per_call(fn: object, rounds: int) -> float:
    assert callable(fn)
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def fresh_interpreter(statement: str, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True, env={**os.environ, "PYTHONPATH": str(
            Path(__file__).resolve().parents[1] / "src")})
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--interpreters", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        project = root / "repo" / "src" / "pkg"
        project.mkdir(parents=True)
        (root / "repo" / ".git").mkdir()
        (root / "repo" / "codeward.toml").write_text(PROJECT)
        (root / "xdg" / "codeward").mkdir(parents=True)
        (root / "xdg" / "codeward" / "config.toml").write_text(USER)
        environ = {"XDG_CONFIG_HOME": str(root / "xdg"), "CODEWARD_SANDBOX": "process"}
        load_config(cwd=project, environ=environ)  # warm the file cache
        baseline = per_call(lambda: (tomllib.loads((root / "repo" / "codeward.toml").read_text()),
                                     tomllib.loads((root / "xdg" / "codeward" / "config.toml").read_text())),
                            args.rounds)
        loaded = per_call(lambda: load_config(cwd=project, environ=environ), args.rounds)
    bare = fresh_interpreter("import tomllib", args.interpreters)
    imported = fresh_interpreter("import codeward.config", args.interpreters)
    print(f"tomllib, both files:           {baseline * 1e3:8.3f} ms")
    print(f"load_config (validate, merge): {loaded * 1e3:8.3f} ms   ratio {loaded / baseline:6.1f}x   "
          f"extra {(loaded - baseline) * 1e3:.2f} ms per command")
    print(f"interpreter + tomllib:         {bare * 1e3:8.1f} ms")
    print(f"interpreter + codeward.config: {imported * 1e3:8.1f} ms   ratio {imported / bare:6.1f}x   "
          f"extra {(imported - bare) * 1e3:.0f} ms per command (pydantic, the models)")


if __name__ == "__main__":
    main()
