"""codeward.serving."""
