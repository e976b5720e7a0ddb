"""Approval: when a call needs a person's yes, and how that person is asked.

- :mod:`.policy` — ``ApprovalPolicy`` (what runs without asking, bound to each tool's origin) and the
  chain's ``Approval`` middleware; the person-only rules (``ask_always``, a changed definition);
- :mod:`.previews` — what a prompt shows: the diff a call would make, the command it would run;
- :mod:`.askers` — who is asked: the MCP client (elicitation), the terminal, ``--yes``;
- :mod:`.desk`, :mod:`.asks` — the terminal raced against the console, and the console's open asks;
- :mod:`.consent` — a person's yes for what only a person may decide (signing, a first install, a commit);
- :mod:`.registry_items` — the tool a registry meta-tool would run, judged as that tool.
"""
