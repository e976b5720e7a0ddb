"""Who may sign registry items: the user's Ed25519 key and the public keys they trust.

A signature is identity, not a checksum: only the holder of a private key can make one, and
an item runs only when its signature verifies against a key the user trusts — their own, or
a teammate's they added with ``codeward registry trust add``. The private key lives in the
user's data directory (``$XDG_DATA_HOME/codeward/signing``, ``~/.local/share/...``), a 0700
folder with a 0600 file, outside every workspace root; the workspace refuses to read or write
it and no sandbox shows it, so the agent never holds it and a signature it writes is worthless.

Files::

    signing/ed25519.pem          the private key (PKCS#8 PEM), created on the first ``codeward sign``
    signing/ed25519.pub          its public half, one line (share it with your team)
    signing/trusted/<id>.pub     keys you trust besides your own, one line each
    signing/signed/<digest>.json what each of your signatures was made over (to name what changed)

A public key line is ``codeward-ed25519 <base64 of the 32 raw bytes> <name>``; its id is the
first 16 hex digits of the SHA-256 of the raw bytes.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

KEY_TYPE = "codeward-ed25519"
PRIVATE_FILE = "ed25519.pem"
PUBLIC_FILE = "ed25519.pub"
TRUSTED_FOLDER = "trusted"
SIGNED_FOLDER = "signed"
KEY_ID_LENGTH = 16
_NAME = re.compile(r"^[A-Za-z0-9@._+-]{1,64}$")
_ID = re.compile(r"^[0-9a-f]{16}$")


class SigningKeyError(Exception):
    """A key that cannot be used: the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class PublicKey:
    """An Ed25519 public key with the name it is known by."""

    raw: bytes
    name: str = ""

    @property
    def key_id(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()[:KEY_ID_LENGTH]

    def line(self) -> str:
        """The one-line form to share: ``codeward-ed25519 <base64> <name>``."""
        encoded = base64.b64encode(self.raw).decode("ascii")
        return f"{KEY_TYPE} {encoded} {self.name}".rstrip()

    def shown(self) -> str:
        return f"{self.key_id} ({self.name})" if self.name else self.key_id

    @classmethod
    def parse(cls, text: str, name: str = "") -> PublicKey:
        """A key from its one-line form; raises :class:`SigningKeyError` naming the problem."""
        parts = text.strip().split()
        if len(parts) < 2 or parts[0] != KEY_TYPE:
            raise SigningKeyError(f"not a codeward public key: expected '{KEY_TYPE} <base64> [name]', got "
                            f"{text.strip()[:60]!r}")
        try:
            raw = base64.b64decode(parts[1], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise SigningKeyError(f"the key's base64 does not decode ({exc})") from exc
        if len(raw) != 32:
            raise SigningKeyError(f"an Ed25519 public key has 32 bytes, this one has {len(raw)}")
        chosen = name or (" ".join(parts[2:]) if len(parts) > 2 else "")
        if chosen and not _NAME.match(chosen):
            raise SigningKeyError(f"{chosen!r} is not a key name: use letters, digits and . _ - + @ (at most 64)")
        return cls(raw, chosen)

    def verify(self, signature: bytes, message: bytes) -> bool:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True)
class KeyStore:
    """The signing folder of one user: their key pair and the keys they trust."""

    folder: Path

    @property
    def private_path(self) -> Path:
        return self.folder / PRIVATE_FILE

    @property
    def public_path(self) -> Path:
        return self.folder / PUBLIC_FILE

    @property
    def trusted_folder(self) -> Path:
        return self.folder / TRUSTED_FOLDER

    # -- the user's own key -----------------------------------------------------------------

    def own(self) -> PublicKey | None:
        """The user's public key, or ``None`` before the first signature."""
        try:
            text = self.public_path.read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError):
            return None
        try:
            return PublicKey.parse(text)
        except SigningKeyError:
            return None

    def create(self, name: str = "") -> PublicKey:
        """Make the key pair (refuses to replace one). The folder is 0700, the private key 0600."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        self._make_private_folder(self.folder)
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        public = PublicKey(raw, name if name and _NAME.match(name) else _default_name())
        try:
            fd = os.open(self.private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError as exc:
            raise SigningKeyError(f"a signing key already exists at {self.private_path}; codeward never replaces it "
                            "(delete it yourself to start over: every item you signed must then be re-signed)") \
                from exc
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
        _write_private(self.public_path, (public.line() + "\n").encode("ascii"), mode=0o644)
        return public

    def ensure(self, name: str = "") -> tuple[PublicKey, bool]:
        """The user's key, made now when there is none (``True`` when it was made)."""
        found = self.own()
        if found is not None and self.private_path.exists():
            return found, False
        return self.create(name), True

    def sign(self, message: bytes) -> tuple[PublicKey, bytes]:
        """Sign ``message`` with the user's private key; raises :class:`SigningKeyError` when unusable."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        public = self.own()
        if public is None:
            raise SigningKeyError(f"there is no signing key in {self.folder}; `codeward sign NAME` makes one")
        self._check_private_file()
        try:
            key = serialization.load_pem_private_key(self.private_path.read_bytes(), password=None)
        except (OSError, ValueError, TypeError) as exc:
            raise SigningKeyError(f"cannot load the signing key {self.private_path}: {exc}") from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningKeyError(f"{self.private_path} is not an Ed25519 key")
        signature = key.sign(message)
        if not public.verify(signature, message):
            raise SigningKeyError(f"{self.private_path} does not match {self.public_path}; restore the pair, or delete "
                            "both to make a new key (then re-sign your items)")
        return public, signature

    def _check_private_file(self) -> None:
        try:
            info = os.stat(self.private_path, follow_symlinks=False)
        except OSError as exc:
            raise SigningKeyError(f"cannot read the signing key {self.private_path}: {exc.strerror}") from exc
        if not stat.S_ISREG(info.st_mode):
            raise SigningKeyError(f"{self.private_path} is not a regular file (a link?); codeward signs only "
                                  "with a key file it made")
        if info.st_mode & 0o077:
            mode = stat.S_IMODE(info.st_mode)
            raise SigningKeyError(f"{self.private_path} can be read by other users (mode {mode:o}); "
                                  f"fix: chmod 600 {self.private_path}")
        if info.st_uid != os.geteuid():
            raise SigningKeyError(f"{self.private_path} belongs to another user (uid {info.st_uid}); sign as its owner")

    # -- what each signature covered ------------------------------------------------------

    def remember(self, signature: bytes, manifest: bytes) -> None:
        """Keep the manifest a signature was made over, so that a later mismatch can name what
        changed. Best effort: a signature holds or fails without it."""
        with contextlib.suppress(OSError, SigningKeyError):
            self._make_private_folder(self.folder)
            self._make_private_folder(self.folder / SIGNED_FOLDER)
            _write_private(self._record(signature), manifest, mode=0o600)

    def recall(self, signature: bytes, key: PublicKey) -> bytes | None:
        """The manifest ``signature`` was made over, if it was made here and ``key`` verifies it
        (so a planted record can never pass for the signed one)."""
        try:
            manifest = self._record(signature).read_bytes()
        except OSError:
            return None
        return manifest if key.verify(signature, manifest) else None

    def _record(self, signature: bytes) -> Path:
        return self.folder / SIGNED_FOLDER / f"{hashlib.sha256(signature).hexdigest()[:32]}.json"

    # -- keys the user trusts ---------------------------------------------------------------

    def trusted(self) -> dict[str, PublicKey]:
        """Every key whose signatures count here, by id: the user's own and those they added."""
        found: dict[str, PublicKey] = {}
        with contextlib.suppress(OSError):
            for entry in sorted(self.trusted_folder.iterdir()):
                if entry.suffix != ".pub" or not entry.is_file() or entry.is_symlink():
                    continue
                try:
                    key = PublicKey.parse(entry.read_text(encoding="ascii"))
                except (SigningKeyError, OSError, UnicodeDecodeError):
                    continue
                if key.key_id == entry.stem:
                    found[key.key_id] = key
        own = self.own()
        if own is not None:
            found[own.key_id] = own
        return found

    def trust(self, key: PublicKey) -> Path:
        """Add a teammate's key; its signatures then count as the user's own do."""
        if not key.name:
            raise SigningKeyError("name the key (--name alice), so that what it signed shows who signed it")
        self._make_private_folder(self.folder)
        self._make_private_folder(self.trusted_folder, mode=0o700)
        target = self.trusted_folder / f"{key.key_id}.pub"
        _write_private(target, (key.line() + "\n").encode("ascii"), mode=0o644)
        return target

    def untrust(self, which: str) -> PublicKey:
        """Remove a trusted key by id or name (the user's own key cannot be removed this way)."""
        own = self.own()
        matches = [k for k in self.trusted().values() if which in (k.key_id, k.name)]
        if own is not None and any(k.key_id == own.key_id for k in matches):
            raise SigningKeyError(f"{which!r} is your own signing key; it is trusted while it exists (delete "
                            f"{self.folder} yourself to retire it)")
        if not matches:
            known = ", ".join(k.shown() for k in self.trusted().values()) or "none"
            raise SigningKeyError(f"no trusted key has the id or name {which!r}; trusted: {known}")
        if len(matches) > 1:
            raise SigningKeyError(f"{which!r} names {len(matches)} keys; give the id instead: "
                            + ", ".join(k.key_id for k in matches))
        (self.trusted_folder / f"{matches[0].key_id}.pub").unlink()
        return matches[0]

    @staticmethod
    def _make_private_folder(folder: Path, mode: int = 0o700) -> None:
        folder.mkdir(parents=True, exist_ok=True, mode=mode)
        info = os.stat(folder, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode):
            raise SigningKeyError(f"{folder} is not a folder (a link?); codeward keeps keys only in a folder it made")
        if stat.S_IMODE(info.st_mode) != mode:
            os.chmod(folder, mode)


def is_key_id(text: str) -> bool:
    return bool(_ID.match(text))


def _write_private(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` atomically (temp file + rename) with ``mode``, never through a link."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def _default_name() -> str:
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.geteuid())
    name = f"{user}@{socket.gethostname().split('.')[0]}"
    return name if _NAME.match(name) else "me"
