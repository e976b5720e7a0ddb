"""codeward.engines.jsonrpc."""
