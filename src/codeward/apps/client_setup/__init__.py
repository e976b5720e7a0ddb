"""Connecting MCP clients to codeward: the command that starts it and each client's config file.

``launch`` names the command that starts *this* installation (for configs and banners);
``clients`` knows where Claude Code, Claude Desktop, Cursor and VS Code keep their MCP servers
and how each spells an entry; ``config_file`` merges one entry into such a file — idempotently,
with a backup, leaving everything else in it alone, and refusing a file it cannot read.
"""
