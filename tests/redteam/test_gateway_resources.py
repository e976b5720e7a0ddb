"""The gateway's resources show an upstream's content, never the gateway's own files or configuration.

A gateway started in a project with its configuration there (an upstream's token in it) is asked,
through its resources, for every file it could hand out: the listing, the templates, reads of its
configuration, of the project's files and secrets, and a URI made to look like an upstream's.
Without native tools it serves none of its own files at all; with them, the files under its roots
that any tool may read, but never its configuration. The token must appear in no answer.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.redteam.harness import SECRET_NAMED, Host

pytestmark = pytest.mark.anyio


def _config(host: Host, native: bool | str) -> str:
    """A gateway configuration in the project: one upstream (down), its token written in the file."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    path = host.project / "gateway.toml"
    path.write_text(f"[mcp]\nnative = {json.dumps(native)}\nstartup_wait = 5\n\n[mcp.servers.remote]\n"
                    f'url = "http://127.0.0.1:{closed}/mcp"\nauth_token = "{SECRET_NAMED}"\ntimeout = 2\n')
    os.chown(path, host.principal.uid, host.principal.gid)
    host.rebaseline()
    return str(path)


async def _try_read(session: Any, uri: str) -> str:
    """A read's text, or its error's message (both recorded for the secret check)."""
    try:
        result = await session.client.read_resource(uri)
    except MCPError as exc:
        return session.host.record(f"refused: {exc.error.message}")
    return session.host.record("read: " + json.dumps(result.model_dump(mode="json")))


@pytest.mark.parametrize("native", [False, "cw"])
async def test_resources_never_show_the_gateways_configuration(host: Host, native: bool | str) -> None:
    config = _config(host, native)
    own = f"file://{host.project}"
    async with host.serve("--config", config, gateway=True) as session:
        client = session.client
        listed = [str(resource.uri) for resource in (await client.list_resources()).resources]
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        host.record(json.dumps(listed) + json.dumps(templates))
        reads = {uri: await _try_read(session, uri) for uri in (
            f"{own}/gateway.toml", f"{own}/./gateway.toml", f"{own}/src/../gateway.toml", f"{own}/.env",
            f"{own}/src/app.py", "file://remote//gateway.toml", f"file://localhost{host.project}/gateway.toml")}
        prompts = [prompt.name for prompt in (await client.list_prompts()).prompts]
    assert not any(uri.endswith("gateway.toml") for uri in listed), listed
    config_reads = [text for uri, text in reads.items() if "gateway.toml" in uri]
    assert all(text.startswith("refused: ") for text in config_reads), config_reads
    assert reads[f"{own}/.env"].startswith("refused: ")
    if native is False:  # a gateway without native tools is no file server
        assert not any(uri.startswith("file:///") for uri in listed) and not templates, (listed, templates)
        assert reads[f"{own}/src/app.py"].startswith("refused: unknown resource")
        assert prompts == []
    else:
        assert f"{own}/src/app.py" in listed and f"{own}/README.md" in listed
        assert "def main()" in reads[f"{own}/src/app.py"]
        assert "codeward's configuration" in reads[f"{own}/gateway.toml"]
    host.assert_clean()  # the token appears in no answer; nothing on the host changed
