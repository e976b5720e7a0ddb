"""codeward.approval."""
