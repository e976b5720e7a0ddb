"""The gateway is invisible: the same conversation, held directly and through it, gets the same answers.

Six upstreams — server-everything (npm) and the probe server (``tests/gateway_probe.py``: every
content type, annotation and metadata field) over stdio, streamable HTTP and SSE — are each asked
everything they offer (:func:`tests.fidelity_support.converse`): the tool listing, calls returning
every kind of result, the questions an upstream asks back (form and URL elicitation, sampling with
and without tools, the roots), progress (each progress call three times: the last notification
used to be lost), log lines, resources, templates, prompts and completions. Each answer is kept as
the JSON the server sent, and the answers through the gateway must equal the direct ones once the
differences ``docs/gateway.md`` documents are undone (:func:`tests.fidelity_support.through_gateway`,
:func:`tests.fidelity_support.in_era`): nothing else may differ.

What runs where, to keep the suite's time small:

* **full matrix** (the cheap features: tool, resource, template and prompt listings, plain calls
  returning every kind of result): all six upstreams, through the gateway served over stdio and
  over HTTP, by a client in each protocol era (2025-11-25 and 2026-07-28) — four sessions. The
  direct conversations (every feature; one session per upstream, in the handshake era they all
  speak) are held once per module;
* **diagonal** (the rest: questions asked back, progress, log lines, reads, prompts, completions):
  in each era the six upstreams are split between the two gateway transports (:data:`FULL`), so
  every upstream has its whole conversation once per era and each gateway transport serves both
  kinds of upstream over three transports;
  The diagonal includes the errors an upstream answers with: a ``-32042`` (URL elicitation required,
  which a client acts on) reaches the client as that same JSON-RPC error; a ``-32001`` is the
  upstream's own error, told as a tool error naming its code and message (it once read "did not
  answer within 300s").

Crash isolation, capability refusals, subscriptions and out-of-call log lines are in
``tests/test_gateway_isolation.py``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import StdioServerParameters

from codeward.gateway.uris import expose_uri
from tests.fidelity_support import (
    ALIASES,
    EVERYTHING,
    LEGACY,
    MODERN,
    Heard,
    Upstreams,
    client,
    converse,
    differences,
    in_era,
    running_upstreams,
    through_gateway,
)
from tests.process_support import codeward_http

pytestmark = [pytest.mark.anyio, pytest.mark.npm, pytest.mark.xdist_group("gateway-fidelity"),
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
              pytest.mark.skipif(EVERYTHING is None, reason="npm test peers not installed (scripts/test)")]

ERAS = {"legacy": LEGACY, MODERN: MODERN}
FULL = {("stdio", "legacy"): {"every-stdio", "probe-http", "every-sse"},
        ("http", "legacy"): {"probe-stdio", "every-http", "probe-sse"},
        ("stdio", MODERN): {"probe-stdio", "every-http", "probe-sse"},
        ("http", MODERN): {"every-stdio", "probe-http", "every-sse"}}
"""Which upstreams have their whole conversation through which gateway, in which era (the diagonal)."""


@pytest.fixture(scope="module")
def upstreams() -> Iterator[Upstreams]:
    with running_upstreams() as running:
        yield running


@pytest.fixture(scope="module")
def direct(upstreams: Upstreams) -> dict[str, dict[str, Any]]:
    """Each upstream's conversation held directly, in the handshake era (the one they all speak)."""

    async def hold() -> dict[str, dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        for alias in ALIASES:
            heard = Heard()
            async with client(upstreams.direct(alias), "legacy", heard) as session:
                seen[alias] = await converse(session, alias.split("-")[0], heard)
        return seen

    return anyio.run(hold)


@pytest.fixture(scope="module")
def gateway_config(upstreams: Upstreams, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return upstreams.gateway_config(tmp_path_factory.mktemp("gateway"))


@pytest.fixture(scope="module")
def http_gateway(gateway_config: Path) -> Iterator[str]:
    with codeward_http("--config", str(gateway_config), "--yes", command="gateway", cwd=gateway_config.parent,
                       timeout=120) as url:
        yield url


def _gateway(transport: str, config: Path, http_url: str) -> Any:
    if transport == "http":
        return http_url
    return StdioServerParameters(command=sys.executable, args=["-m", "codeward", "gateway", "--config", str(config),
                                                                "--yes"], cwd=str(config.parent), env=dict(os.environ))


def test_the_direct_conversations_hold_what_is_compared(direct: dict[str, dict[str, Any]]) -> None:
    """The comparison means something: each upstream really answers with the richness under test."""
    for transport in ("stdio", "http", "sse"):
        every, probe = direct[f"every-{transport}"], direct[f"probe-{transport}"]
        assert len(every["tools/list"]["tools"]) == 17, [t["name"] for t in every["tools/list"]["tools"]]
        content = probe["call every_content"]["content"]
        assert [block["type"] for block in content] == ["text", "text", "image", "audio", "resource_link",
                                                         "resource", "resource"]
        assert all("annotations" in block and "_meta" in block for block in content)
        assert probe["call every_content"]["_meta"] == {"probe/result": {"ok": True}}
        assert probe["call failing"]["structuredContent"] == {"reason": "broken", "code": 7}
        tool = next(t for t in probe["tools/list"]["tools"] if t["name"] == "every_content")
        assert {"$defs", "$schema"} <= tool["outputSchema"].keys() and tool["annotations"]["title"]
        assert {"icons", "_meta", "execution"} <= tool.keys()
        assert probe["progress 0"] == [float(n) for n in range(1, 14)]
        assert every["progress 0"] == [1.0, 2.0, 3.0, 4.0]
        assert [level for level, _, _ in probe["logs"]] == ["debug", "info", "warning", "error"]
        assert "sampled: Hi?" in probe["ask ask {'kind': 'sample'}"]["content"][0]["text"]
        assert "file:///home/user/project" in every["ask get-roots-list {}"]["content"][0]["text"]
        assert probe["refusal rpc_error"] == {"code": -32001, "message": "the probe refuses", "data": {"why": "probe"}}
        assert every["refusal trigger-url-elicitation"]["code"] == -32042


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize("gateway", ["stdio", "http"])
async def test_every_feature_of_every_upstream_passes_unchanged(
        gateway: str, era: str, direct: dict[str, dict[str, Any]], gateway_config: Path, http_gateway: str) -> None:
    version = ERAS[era]
    heard = Heard()
    problems: list[str] = []
    async with client(_gateway(gateway, gateway_config, http_gateway), era, heard) as session:
        assert session.protocol_version == version
        for alias in ALIASES:
            seen = await converse(session, alias.split("-")[0], heard, name=lambda tool, a=alias: f"{a}__{tool}",
                                  uri=lambda uri, a=alias: expose_uri(a, uri) or uri,
                                  full=alias in FULL[gateway, era])
            expected = in_era(direct[alias], version)
            got = in_era(through_gateway(seen, alias), version)
            problems += [f"{alias}: {difference}" for difference in differences(expected, got)]
    assert not problems, "\n".join(problems)
