"""codeward.engines.contained."""
