"""What the egress proxy (``[network] allowed_domains``) costs a sandboxed run, against a direct
connection measured in the same run.

A local HTTP server on the host's loopback serves a small file and a ``--mb`` MiB one. Rows (p50 of
``--runs`` each, taken in turns so a busy machine slows all of them alike):

- ``direct``: curl on the host straight to the server (the baseline);
- ``proxied``: curl inside a client's network namespace (the one runs share: only ``lo``) through the
  proxy's listener there, as ``http_proxy`` sends it (forwarded request);
- ``tunnelled``: the same through a ``CONNECT`` tunnel (``curl -p``), what https takes.

Also: what making a client's namespace and the proxy's listener in it costs (once per client).

    .venv/bin/python bench/egress_proxy_bench.py [--runs 11] [--mb 200]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from codeward.config.network import NetworkSettings
from codeward.engines.sandbox.egress_policy import EgressPolicy
from codeward.engines.sandbox.egress_proxy import PROXY_PORT, EgressProxy
from codeward.engines.sandbox.shared_net import SharedNetwork


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--mb", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "big.bin").write_bytes(b"\0" * (args.mb << 20))
        (Path(folder) / "small.txt").write_text("hello\n")
        server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=folder))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            measure(server.server_address[1], args.runs, args.mb)
        finally:
            server.shutdown()


def measure(port: int, runs: int, mb: int) -> None:
    made = []
    for _ in range(runs):
        began = time.perf_counter()
        network = SharedNetwork.create()
        network.listen(PROXY_PORT).close()
        made.append(time.perf_counter() - began)
        network.close()
    print(f"a client's namespace and the proxy's listener in it: {statistics.median(made) * 1000:.1f} ms (once)")
    network = SharedNetwork.create()
    proxy = EgressProxy()
    served = proxy.serve(network.listen(PROXY_PORT), "bench")
    grant = served.admit(EgressPolicy.of(NetworkSettings(
        allowed_domains=("pkg.test",), hosts={"pkg.test": "127.0.0.1"}, allowed_addresses=("127.0.0.1",))))
    inside = ["nsenter", f"--user=/proc/self/fd/{network.user_fd}", f"--net=/proc/self/fd/{network.net_fd}",
              "--preserve-credentials"]
    through = ["-x", grant.environment()["HTTP_PROXY"]]
    rows = {
        "direct": ([], [], "127.0.0.1"),
        "proxied": (inside, through, "pkg.test"),
        "tunnelled": (inside, [*through, "-p"], "pkg.test"),
    }
    times: dict[tuple[str, str], list[float]] = {(row, f): [] for row in rows for f in ("small.txt", "big.bin")}
    try:
        for _ in range(runs):
            for row, (prefix, options, host) in rows.items():
                for name in ("small.txt", "big.bin"):
                    done = subprocess.run([*prefix, "curl", "-sS", "-o", "/dev/null", "-w", "%{time_total}", *options,
                                           f"http://{host}:{port}/{name}"], capture_output=True, text=True,
                                          pass_fds=(network.user_fd, network.net_fd), check=True)
                    times[(row, name)].append(float(done.stdout))
    finally:
        served.close()
        proxy.close()
        network.close()
    small = statistics.median(times[("direct", "small.txt")])
    big = statistics.median(times[("direct", "big.bin")])
    print(f"{'row':<10} {'small request ms':>17} {'ratio':>6} {f'{mb} MiB s':>10} {'MB/s':>7} {'ratio':>6}")
    for row in rows:
        s, b = statistics.median(times[(row, "small.txt")]), statistics.median(times[(row, "big.bin")])
        print(f"{row:<10} {s * 1000:>17.2f} {s / small:>6.2f} {b:>10.3f} {mb * 1.048576 / b:>7.0f} {b / big:>6.2f}")


if __name__ == "__main__":
    main()
