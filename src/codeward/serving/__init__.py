"""Serving: the stack every command builds, the MCP server over it, and the one runtime that serves it.

- :mod:`.stack` — ``build_stack``: workspace, catalog (and its per-call steps), services, the chain;
- :mod:`.runtime` — ``serve_mcp``: shared state → audit → control plane → approvals → observers →
  stack → server → transport, for ``serve``, ``gateway`` and replicas alike;
- :mod:`.server` — ``CodewardServer`` over the official SDK; :mod:`.http_server` its HTTP side;
- :mod:`.transport` — stdio and HTTP transports; :mod:`.shared_state` — what replicas share;
- :mod:`.tool_listing`, :mod:`.tool_changes`, :mod:`.file_resources`, :mod:`.sdk_wire_models`.
"""
