"""Where a symbolic link leads, decided as the kernel decides it: for every tool that makes one.

A link's target is not a path to tidy with ``normpath``: the kernel walks it component by
component and follows each link it meets *before* it applies the next ``..``. With
``a/b/c/sub -> /usr/lib/x86_64-linux-gnu``, the text ``a/b/c/sub/../../../../home/user`` looks like
a path inside the project, and leads to ``/home/user``; ``/usr/lib/ssl/private/../../../x`` looks
like a path under ``/usr`` and leads out of it (``private`` is a link to ``/etc/ssl/private``).

:func:`link_refusal` is the one judgement: a link may be made when its target, resolved through
every link on the way (:func:`kernel_resolve`, with a ``readlink`` that may see a sandboxed run's
writes before they are applied), lands inside the workspace's roots — not on a protected path —
or in the read-only system folders programs live in (:data:`SYSTEM_TARGETS`); and its text never
climbs with ``..`` out of a folder a link led to (:func:`climbs_out_of_link`), whose place a
later change of that link would move.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from codeward.kernel.workspace import Workspace

SYSTEM_TARGETS = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/lib32/", "/dev/null")
"""Where a made link may lead outside the roots: the read-only system programs live in (a
virtualenv's ``bin/python`` links to ``/usr/bin/python3``) — judged where the link really lands."""
MAX_LINKS = 40
"""Links followed before a path is a loop (the kernel's ``ELOOP`` limit)."""

Readlink = Callable[[str], "str | None"]
"""A link's target text, or None when the path is not a link (or does not exist)."""


def host_readlink(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def kernel_resolve(path: str, readlink: Readlink = host_readlink) -> str | None:
    """The absolute ``path`` with every link followed before the ``..`` after it is applied (as
    ``os.path.realpath``, over any ``readlink``); missing parts are kept as written. None: a loop."""
    pending = list(reversed(path.split("/")))
    resolved = "/"
    followed = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, part)
        target = readlink(candidate)
        if target is None:
            resolved = candidate
            continue
        followed += 1
        if followed > MAX_LINKS:
            return None
        pending.extend(reversed(target.split("/")))
        if target.startswith("/"):
            resolved = "/"
    return resolved


def climbs_out_of_link(folder: str, target: str, readlink: Readlink = host_readlink) -> str:
    """The link whose folder a ``..`` of ``target`` (read from ``folder``) climbs out of ("" when
    none does): ``sub/..`` where ``sub`` is a link, as the path written (``folder/sub``). Leading
    ``..`` (from the link's own folder) and ``..`` inside a real folder are fine."""
    current = "/" if target.startswith("/") else folder
    below_link: int | None = None
    last_link = ""
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if below_link == 0:
                return last_link
            if below_link is not None:
                below_link -= 1
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        if readlink(candidate) is None:
            current = candidate
            below_link = None if below_link is None else below_link + 1
            continue
        landed = kernel_resolve(candidate, readlink)
        if landed is None:
            return ""  # a loop: the caller's resolution says so
        current, below_link, last_link = landed, 0, candidate
    return ""


def link_refusal(workspace: Workspace, link: Path, target: str, readlink: Readlink = host_readlink) -> str:
    """Why a link at ``link`` (an absolute path) to ``target`` may not be made ("" when it may)."""
    folder = str(link.parent)
    climbed = climbs_out_of_link(folder, target, readlink)
    if climbed:
        return (f"a symlink whose target climbs (..) out of the folder the link {workspace.display(Path(climbed))} "
                "leads to (the kernel follows that link first, so its .. lands elsewhere than it reads)")
    joined = os.path.join(folder, target)
    lands = kernel_resolve(joined, readlink)
    if lands is None:
        return "a symlink loop"
    if any(lands.startswith(prefix) or lands == prefix.rstrip("/") for prefix in SYSTEM_TARGETS):
        return ""
    if not workspace.contains(Path(lands)):
        return "a symlink pointing outside the workspace (every link on its way followed, as the kernel does)"
    for path in dict.fromkeys((Path(os.path.normpath(joined)), Path(lands))):
        if workspace.write_verdict(path).refused or workspace.blacklist_reason(path):
            return "a symlink pointing at a protected path"
    return ""
