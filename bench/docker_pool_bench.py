"""What a code run costs on the Docker backend, with and without its warm pool, against the local
(bubblewrap) sandbox measured in the same run: ``coding_execute_code``'s path for ``print(1)``.

Rows (median of ``--runs`` calls each, the rows interleaved call by call so a busy machine slows them alike):

- ``bwrap warm pool`` (the baseline): the local sandbox with its warm pool (the default), pool ready;
- ``bwrap cold``: the local sandbox without a pool;
- ``docker cold``: a container created, started and removed per run (``[coding] pool_size = 0``);
- ``docker warm pool``: a started container of the Docker warm pool per run, pool ready (the refill
  happens between calls).

The Docker engine is the one ``DOCKER_HOST`` names, or (as root with Debian's docker.io) a private
``dockerd`` started for the run; the image is built locally from this machine's Python
(``tests/docker_support.py``: no registry needed). The issue's target: docker warm ≤ 1.5× bwrap by median.

    .venv/bin/python bench/docker_pool_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from tests.docker_support import docker_engine, sandbox_image  # noqa: E402

from codeward.config import CodingSettings  # noqa: E402
from codeward.engines.execution.execute import Execution, execute  # noqa: E402
from codeward.engines.execution.runtime import CodingRuntime  # noqa: E402

CODE = "print(1)"


def checked(result: Execution, warm: bool | None = None) -> None:
    if result.stdout != "1\n" or (warm is not None and result.warm != warm):
        raise SystemExit(f"unexpected run ({result.backend}, warm {result.warm}): {result}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with docker_engine() as engine:
        os.environ.update(engine.env())
        image = sandbox_image(engine)
        images = {"python": image}
        bwrap_warm = CodingRuntime(CodingSettings(backend="bwrap", pool_size=2))
        bwrap_cold = CodingRuntime(CodingSettings(backend="bwrap", pool_size=0))
        docker_cold = CodingRuntime(CodingSettings(backend="docker", pool_size=0, docker_images=images))
        docker_warm = CodingRuntime(CodingSettings(backend="docker", pool_size=2, docker_images=images))
        local_pool = bwrap_warm.pool()
        docker_pool = docker_warm.docker_pool(docker_warm.sandbox(), image)  # type: ignore[arg-type]
        assert local_pool is not None and docker_pool is not None
        rows: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
            "bwrap warm pool": (lambda: local_pool.wait_ready(30),
                                lambda: checked(execute(bwrap_warm, "python", CODE), warm=True)),
            "bwrap cold": (lambda: None, lambda: checked(execute(bwrap_cold, "python", CODE), warm=False)),
            "docker cold": (lambda: None, lambda: checked(execute(docker_cold, "python", CODE), warm=False)),
            "docker warm pool": (lambda: docker_pool.wait_ready(60),
                                 lambda: checked(execute(docker_warm, "python", CODE), warm=True)),
        }
        times: dict[str, list[float]] = {name: [] for name in rows}
        for ready, run in rows.values():  # one call each first: images, toolchains, pools
            ready()
            run()
        for _ in range(args.runs):
            for name, (ready, run) in rows.items():
                ready()
                started = time.perf_counter()
                run()
                times[name].append((time.perf_counter() - started) * 1000)
        for runtime in (bwrap_warm, bwrap_cold, docker_cold, docker_warm):
            runtime.close()
    baseline = statistics.median(times["bwrap warm pool"])
    print(f"coding_execute_code of {CODE!r}, median of {args.runs} runs; baseline: bwrap warm pool "
          f"(load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<18} {median:8.1f} ms   {median / baseline:5.2f}x")
    cold, warm = statistics.median(times["docker cold"]), statistics.median(times["docker warm pool"])
    print(f"docker warm pool vs docker cold: {warm / cold:.2f}x; vs bwrap warm pool: {warm / baseline:.2f}x "
          "(target ≤ 1.5x)")


if __name__ == "__main__":
    main()
