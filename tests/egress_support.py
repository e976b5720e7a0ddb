"""A local package index and web server for the egress proxy's tests: a tiny wheel, its simple-index
page and a text file, served on a loopback address, counting the connections it accepts (so a test can
show that a refused name never reached it)."""

from __future__ import annotations

import base64
import hashlib
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PACKAGE = "tinypkg"
VALUE = "tiny-value-4711"


def build_index(directory: Path) -> Path:
    """``directory`` holding ``simple/tinypkg/`` (PEP 503), the wheel it links to, and ``hello.txt``."""
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"{PACKAGE}-1.0-py3-none-any.whl"
    files = {
        f"{PACKAGE}/__init__.py": f"VALUE = {VALUE!r}\n",
        f"{PACKAGE}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 1.0\n",
        f"{PACKAGE}-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                                          "Tag: py3-none-any\n",
    }
    record = "".join(f"{name},sha256={_digest(text.encode())},{len(text.encode())}\n" for name, text in files.items())
    files[f"{PACKAGE}-1.0.dist-info/RECORD"] = record + f"{PACKAGE}-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    page = directory / "simple" / PACKAGE / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<html><body><a href="../../{wheel.name}">{wheel.name}</a></body></html>\n')
    (directory / "hello.txt").write_text("hello through the proxy\n")
    return directory


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@dataclass
class Served:
    port: int
    connections: list[str] = field(default_factory=list)


class _Counting(ThreadingHTTPServer):
    seen: list[str]

    def verify_request(self, request: object, client_address: object) -> bool:
        self.seen.append(str(client_address))
        return True


@contextmanager
def serve_directory(directory: Path, address: str = "127.0.0.1", port: int = 0) -> Iterator[Served]:
    """``python -m http.server`` for ``directory`` on ``address``, in a thread."""
    server = _Counting((address, port), partial(_Quiet, directory=str(directory)))
    served = Served(server.server_address[1])
    server.seen = served.connections
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass
