"""jedi's on-disk parse cache (parso's pickles) made safe to share between processes.

parso writes a cached parse by truncating the pickle in place and reads it back with a bare
``pickle.load``. Two codeward processes resolving names at once (two servers, a server and
``codeward call``) can therefore read a file another one is still writing, and a process
killed mid-write leaves a truncated pickle behind for good: jedi then raises
``EOFError: Ran out of input`` on every lookup that imports that module. Here the write goes
to a temporary file renamed into place, and an entry that does not load is a cache miss (it
is parsed again and rewritten).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import tempfile
from typing import Any

_GUARDED = "_codeward_guarded"


def guard_parse_cache() -> None:
    """Install the atomic write and the forgiving read into parso, once per process."""
    import parso.cache as cache

    if getattr(cache._save_to_file_system, _GUARDED, False):
        return
    read = cache._load_from_file_system

    def save(hashed_grammar: str, path: Any, item: Any, cache_path: Any = None) -> None:
        target = cache._get_hashed_path(hashed_grammar, path, cache_path=cache_path)  # type: ignore[no-untyped-call]
        handle, temporary = tempfile.mkstemp(prefix=".parse-", dir=os.path.dirname(target))
        try:
            with os.fdopen(handle, "wb") as file:
                pickle.dump(item, file, pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def load(hashed_grammar: str, path: Any, p_time: Any, cache_path: Any = None) -> Any:
        try:
            return read(hashed_grammar, path, p_time, cache_path=cache_path)  # type: ignore[no-untyped-call]
        except Exception:  # a truncated or foreign pickle: parse the module again
            return None

    setattr(save, _GUARDED, True)
    cache._save_to_file_system = save
    cache._load_from_file_system = load
