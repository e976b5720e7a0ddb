"""codeward: a secure Model Context Protocol toolkit for AI coding agents."""

__version__ = "0.1.0"
