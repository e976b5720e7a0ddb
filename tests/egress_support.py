"""A local package index and web server for the egress proxy's tests: a tiny wheel, its simple-index
page and a text file, served on a loopback address, counting the connections it accepts (so a test can
show that a refused name never reached it)."""

from __future__ import annotations

import base64
import datetime
import hashlib
import ssl
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
    hosts: list[str] = field(default_factory=list)
    """The ``Host`` header of each request received."""


class _Counting(ThreadingHTTPServer):
    seen: list[str]
    hosts: list[str]

    def verify_request(self, request: object, client_address: object) -> bool:
        self.seen.append(str(client_address))
        return True


def self_signed(name: str, cert_dir: Path, key_dir: Path) -> tuple[Path, Path]:
    """A certificate for ``name`` (its own issuer, so it is also the CA a client trusts: ``NAME.crt`` in
    ``cert_dir``) and its key (in ``key_dir``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    cert_path, key_path = cert_dir / f"{name}.crt", key_dir / f"{name}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@contextmanager
def serve_directory(directory: Path, address: str = "127.0.0.1", port: int = 0,
                    tls: tuple[Path, Path] | None = None) -> Iterator[Served]:
    """``python -m http.server`` for ``directory`` on ``address`` (https with ``tls``: certificate, key), in a
    thread."""
    server = _Counting((address, port), partial(_Quiet, directory=str(directory)))
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    served = Served(server.server_address[1])
    server.seen, server.hosts = served.connections, served.hosts
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _Quiet(SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        self.server.hosts.append(self.headers.get("Host", ""))  # type: ignore[attr-defined]
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass
