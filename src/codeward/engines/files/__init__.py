"""Text files as codeward reads and writes them: decoded once and written back atomically with their
encoding, BOM and line endings (:mod:`.textfile`), walked through the gate (:mod:`.walk`), patched
exactly (:mod:`.unified_diff`), searched with ripgrep (:mod:`.ripgrep`)."""
