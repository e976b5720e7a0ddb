"""Red-team attacks through real MCP sessions, as root and as an unprivileged user (see README.md)."""
