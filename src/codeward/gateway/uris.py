"""Upstream resource URIs namespaced like tool names, and back: ``scheme://alias/rest``.

Two upstreams may both serve ``file:///notes.md``, and the gateway must know which one a read
is for, so every upstream URI is served with its server's alias right after the scheme (and
its ``//``, when it has one):

========================================  =============================================
the upstream's URI                        what the gateway's clients see
========================================  =============================================
``demo://resource/static/document/1``     ``demo://every/resource/static/document/1``
``file:///home/me/notes.md``              ``file://fs//home/me/notes.md``
``urn:isbn:0451450523``                   ``urn:books/isbn:0451450523``
========================================  =============================================

URI templates are mapped the same way (``demo://resource/dynamic/text/{id}`` →
``demo://every/resource/dynamic/text/{id}``), so a URI a client expands from a mapped template
maps back. Aliases cannot be empty and never contain ``/``, so codeward's own ``file:///...``
URIs (nothing between ``//`` and the path) never read as an upstream's.
"""

from __future__ import annotations

import re
from collections.abc import Collection

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*:)(//)?")


def expose_uri(alias: str, uri: str) -> str | None:
    """``uri`` of server ``alias`` as the gateway serves it; None when it has no scheme to put the alias after."""
    match = _SCHEME.match(uri)
    if match is None:
        return None
    head = match.group(0)
    return f"{head}{alias}/{uri[len(head):]}"


def upstream_uri(uri: str, aliases: Collection[str]) -> tuple[str, str] | None:
    """``(alias, the upstream's own URI)`` for a URI the gateway serves; None when it names no known alias."""
    match = _SCHEME.match(uri)
    if match is None:
        return None
    head = match.group(0)
    alias, slash, rest = uri[len(head):].partition("/")
    if not slash or alias not in aliases:
        return None
    return alias, f"{head}{rest}"
