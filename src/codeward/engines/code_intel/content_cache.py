"""Results computed from a text, kept by a hash of the text: asking twice about one file is cheap.

Keyed by content (not mtime), so a cache can never serve a result for an older version of a
file. Thread-safe and bounded (least recently used goes first); a computation that raises is
remembered too and raises again, so a file that does not parse is not parsed again and again.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class ContentCache(Generic[T]):
    """``make(text)`` results keyed by (``kind``, a hash of ``text``)."""

    def __init__(self, size: int, errors: tuple[type[Exception], ...] = ()) -> None:
        self._size = size
        self._errors = errors
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, bytes], T | Exception] = OrderedDict()

    def get(self, kind: str, text: str, make: Callable[[str], T]) -> T:
        key = (kind, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest())
        with self._lock:
            cached = self._entries.get(key)
            if cached is not None:
                self._entries.move_to_end(key)
        if cached is None:
            try:
                cached = make(text)
            except self._errors as exc:
                cached = exc
            with self._lock:
                self._entries[key] = cached
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
        if isinstance(cached, Exception):
            raise cached
        return cached
