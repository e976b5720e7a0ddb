"""Batch functions for the symbol index's worker pool that fail the way a pool's transport can.

Module-level so that spawned workers can import them; each tags its batch exactly like
``tag_files`` unless the batch holds ``mod07.py``, the one batch that fails.
"""

from __future__ import annotations

import os
import pickle
from typing import NoReturn

from codeward.engines.code_intel.index_rows import TaggedFile, tag_files

Job = tuple[str, str, int]
POISONED = "mod07.py"


def _poisoned(batch: list[Job]) -> bool:
    return any(os.path.basename(path) == POISONED for path, _language, _id in batch)


def raises_eof(batch: list[Job]) -> list[TaggedFile]:
    """What a worker reading a truncated pickle raises."""
    if _poisoned(batch):
        raise EOFError("Ran out of input")
    return tag_files(batch)


def unpicklable_result(batch: list[Job]) -> list[object]:
    """A result that cannot be sent back from the worker."""
    result: list[object] = list(tag_files(batch))
    if _poisoned(batch):
        result.append(lambda: None)
    return result


def _broken_on_arrival() -> NoReturn:
    raise pickle.UnpicklingError("the batch's result was cut short")


class _CutShort:
    def __reduce__(self) -> tuple[object, tuple[()]]:
        return _broken_on_arrival, ()


def result_fails_to_load(batch: list[Job]) -> list[object]:
    """A result that crosses the pipe but cannot be loaded in the parent."""
    result: list[object] = list(tag_files(batch))
    if _poisoned(batch):
        result.append(_CutShort())
    return result


def worker_dies(batch: list[Job]) -> list[TaggedFile]:
    """A worker killed mid-batch (the OOM killer, a signal)."""
    if _poisoned(batch):
        os._exit(9)
    return tag_files(batch)
