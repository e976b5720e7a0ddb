"""The checkpoint step: what each call of a writing tool changes becomes its checkpoint.

One of the steps a stack hands its catalog (:mod:`codeward.kernel.steps`): for a call of a tool
that is not read-only it opens a :class:`~codeward.engines.checkpoints.journal.Journal`, notes the
files the call's arguments name for writing before the tool runs, hands the journal to the tool
(``ctx.call.journal``) and commits it after — even when the tool failed — so ``undo`` can put
back whatever the call changed (``outcome.checkpoint``). ``[checkpoints] enabled = false``
(:class:`~codeward.config.checkpoints.CheckpointSettings`, from the context's services) records
nothing.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from codeward.config.checkpoints import CheckpointSettings
from codeward.kernel.outcome import ToolOutcome
from codeward.kernel.steps import Proceed, RunningCall

SUMMARY_WIDTH = 60


class RecordChanges:
    """Record what each call of a writing tool changes (see the module)."""

    def __call__(self, call: RunningCall, proceed: Proceed) -> ToolOutcome:
        if call.read_only:
            return proceed(call)
        settings = call.ctx.services.get(CheckpointSettings)
        if not settings.enabled:
            return proceed(call)
        # Deferred: a server imports the journal (and the store's record models) with its first writing call.
        from codeward.engines.checkpoints.journal import Journal

        journal = Journal(call.ctx.workspace, call.name, summary(call), settings)
        for path in call.write_targets:
            if isinstance(path, Path):
                journal.before(path)
        try:
            outcome = proceed(call.with_context(call.ctx.child(call=replace(call.ctx.call, journal=journal))))
        finally:
            record = journal.commit()  # whatever changed, even if the tool then failed
        if journal.problems:
            outcome.text = "\n".join([outcome.text, "[no complete checkpoint: " + "; ".join(journal.problems) + "]"])
        outcome.checkpoint = record.id if record is not None else None
        return outcome


def summary(call: RunningCall) -> str:
    """One line naming a call in the checkpoint list: the tool and the files it writes (else its first text)."""
    shown = [str(call.values[p]) for p in call.write_paths if isinstance(call.values.get(p), str)]
    if not shown:
        shown = [text for text in call.values.values() if isinstance(text, str)][:1]
    return " ".join([call.name, *(_one_line(text) for text in shown)])


def _one_line(text: str, width: int = SUMMARY_WIDTH) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
