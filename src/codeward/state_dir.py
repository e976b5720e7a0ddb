"""The ``.codeward`` folder in a project: what git should not pick up from it.

codeward keeps caches and logs there (the symbol index, saved outputs, the shell log). A
``git add .`` must not commit a database of tens of megabytes, so the first of them to be
written also writes ``.codeward/.gitignore`` naming those parts. Other state that a team may
want to share (gateway tool pins, the registry's files) is left out of it on purpose.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

GITIGNORE = """\
# Written by codeward: its caches and logs, rebuilt as needed. Delete this file to track them.
index.sqlite*
outputs/
logs/
"""


def ignore_caches(state_dir: Path) -> None:
    """Write ``state_dir/.gitignore`` unless it exists (never through a link; failures are silent)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with contextlib.suppress(OSError):
        fd = os.open(state_dir / ".gitignore", flags, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(GITIGNORE)
