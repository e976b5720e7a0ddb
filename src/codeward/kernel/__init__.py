"""The kernel: what a call is, and what every floor above it may use.

- :mod:`.result` — ``Result``, ``ErrorKind``: errors as values;
- :mod:`.workspace` — the gate every path goes through (allowlist, blacklist, resolution);
- :mod:`.context` — ``ToolContext``: the workspace, settings, services (typed slots), the call's facts;
- :mod:`.catalog` — ``@tool`` and ``Catalog``: tools as typed functions, dispatched by table;
- :mod:`.steps` — the steps around each run of a native tool (output bound, write locks, error trap);
- :mod:`.outcome`, :mod:`.content` — what a finished call gives back;
- :mod:`.surface`, :mod:`.chain` — surfaces of tools (and of resources and prompts) and the one chain of
  middleware around them;
- :mod:`.providers` — resources and prompts as codeward's own types;
- :mod:`.state_dir`, :mod:`.path_locks`, :mod:`.user_dirs`, :mod:`.validation_messages`,
  :mod:`.wire_schema`, :mod:`.schema_cache`, :mod:`.state_unavailable`, :mod:`.moved_names`,
  :mod:`.python_parse` — the small things they share.

Nothing here imports a floor above it (``pyproject.toml``'s import contract; docs/architecture.md).
"""
