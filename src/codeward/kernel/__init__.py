"""codeward.kernel."""
