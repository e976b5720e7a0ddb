"""codeward.engines."""
