"""codeward.engines.files."""
