"""The engines: the domain machinery the tools drive, one sub-package each, in their own order.

Lowest first: ``files`` (text files kept as they were, gated walks, patches, ripgrep), ``jsonrpc``
(framing and the guard of JSON-RPC lines), ``code_intel`` (symbols, outlines, the index, references),
``llm`` (the one model client), ``net`` (HTTP behind the SSRF guard), ``git`` (the hardened git),
``checkpoints`` (every change recorded, undo), ``sandbox`` (the one way a program runs),
``execution`` (code execution over it), ``review`` (the analyzers and their reports), ``shell``
(``run_shell``), ``beads`` (the issue tracker), ``registry`` (``.ai/`` tools, directives, knowledge).
An engine may use the engines below it, the configuration and the kernel, never what sits above.
"""
