"""JSON-RPC as it travels over a pipe: newline-delimited framing (:mod:`.line_streams`) and the guard
that answers every malformed message before it is parsed (:mod:`.guard`). The stdio server and the
gateway's stdio client both speak it."""
