"""codeward.apps."""
