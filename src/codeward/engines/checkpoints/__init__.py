"""Checkpoints: every change a tool makes to the project, recorded so that it can be undone.

- :mod:`.states` — what a path was (absent, a file with a content hash, a folder, a link);
- :mod:`.store` — the on-disk store under ``.codeward/checkpoints/``: content-addressed
  snapshots, one record per tool call, a trash for deletions, bounded and pruned;
- :mod:`.journal` — the recorder a tool call writes through (``ctx.call.journal``);
- :mod:`.rewind` — undo: back N tool calls or to before a checkpoint, refusing to overwrite
  what changed outside codeward since unless told to.
"""
