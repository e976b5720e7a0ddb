"""``/api/gui`` for ``codeward chat``: the session's settable fields and its actions.

Fields are checked like ``codeward.toml`` checks them (the typed config's own validators),
and the run's start-up settings are a ceiling: a script may narrow what the agent may do —
fewer auto-approved tools, fewer tool rounds, fewer toolsets — but widening it takes the same
act as editing ``codeward.toml`` or the command line, so it is refused here with that hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from codeward.apps.control.gui import (
    CLICKS_CANCEL,
    CLICKS_RESET,
    CLICKS_SEND,
    GuiError,
    GuiTask,
    StateDriver,
)
from codeward.apps.control.state import ControlState
from codeward.config.mcp import GatewayConfig
from codeward.config.model_profile import ModelConfigError

if TYPE_CHECKING:
    from codeward.apps.agent.conversation import Turn
    from codeward.apps.agent.shell import ChatShell

MAX_PROMPT_CHARS = 100_000
MAX_MESSAGE_CHARS = 1_000_000
MAX_ENTRIES = 2000
WIDENING_HINT = ("Widening what the agent may do takes the same act as editing codeward.toml: change it there "
                 "(or on the command line) and start a new session.")

FIELDS: dict[str, str] = {
    "model": "the model: a [model.profiles] name, or a model id on OPENAI_BASE_URL",
    "profile": "the same as model",
    "auto_approve": "tool names or globs run without asking (a subset of the start-up list)",
    "max_tool_depth": "tool-call rounds per message (1 to the start-up value)",
    "tracked_files": "files whose content goes to the model (paths or globs inside the roots)",
    "system_prompt": "the system prompt of the conversation",
    "toolsets": "toolsets offered (a subset of the start-up choice), or null for the budget's choice",
    "ai_input": "a message draft: click btn_gen_send sends it",
}


class ChatDriver(StateDriver):
    """Drives a :class:`~codeward.apps.agent.shell.ChatShell`; applied on its loop."""

    def __init__(self, state: ControlState, shell: ChatShell) -> None:
        super().__init__(state)
        self.shell = shell
        session = shell.session
        approval = session.stack.approval
        self.ceiling_auto_approve = tuple(approval.policy.auto_approve) if approval is not None else ()
        self.ceiling_depth = session.settings.max_tool_depth
        self.ceiling_toolsets = session.choice.toolsets
        self.draft = ""
        shell.on_reset.append(self._cleared)

    def _cleared(self) -> None:
        """After a reset the console shows the new, empty session."""
        shell = self.shell
        self.state.set_session({"id": shell.log.session_id, "model": shell.session.profile.model, "entries": []})
        self.state.set_project({**self.state.project(), "chat_session": shell.log.session_id})

    # -- project and session posts ---------------------------------------------------------------

    def project_tasks(self, project: Mapping[str, Any]) -> list[GuiTask]:
        """Keys of a posted project that are session fields (``model``, ``system_prompt``...) are set."""
        super().project_tasks(project)
        values = self.values()
        skipped = {"ai_input", "profile"} if "model" in project else {"ai_input"}  # one name for the model
        return [GuiTask("set_value", key, value) for key, value in project.items()
                if key in FIELDS and key not in skipped and value != values.get(key)]

    def session_task(self, session: Mapping[str, Any]) -> GuiTask | None:
        """A posted session's entries become the conversation (between replies, in a new session file)."""
        return GuiTask("replace_session", value=_turns(session.get("entries", [])))

    # -- reading -----------------------------------------------------------------------------------

    def values(self) -> dict[str, Any]:
        shell = self.shell
        session = shell.session
        approval = session.stack.approval
        toolsets = session.choice.toolsets
        return {
            "model": session.profile.model, "profile": session.profile.name,
            "auto_approve": list(approval.policy.auto_approve) if approval is not None else [],
            "max_tool_depth": session.settings.max_tool_depth,
            "tracked_files": shell.tracked.paths(),
            "system_prompt": shell.conversation.system,
            "toolsets": list(toolsets) if toolsets is not None else None,
            "ai_input": self.draft,
            "turns": len(shell.conversation.turns),
            "last_reply": next((t.content for t in reversed(shell.conversation.turns)
                                if t.role == "assistant" and t.content), None),
            "chat_session": shell.log.session_id,
            **super().values(),
        }

    def fields(self) -> dict[str, dict[str, Any]]:
        described = {name: {"settable": True, "about": about} for name, about in FIELDS.items()}
        return {**described, **{name: {"settable": False} for name in self.values() if name not in described}}

    # -- checking (on the API's thread: reads only) --------------------------------------------

    def check(self, task: GuiTask) -> None:
        if task.action == "set_value":
            if task.item not in FIELDS:
                self._unknown_field(task.item)
            self._value(task.item, task.value)
        elif task.action == "click" and task.item in (*CLICKS_SEND, *CLICKS_CANCEL, *CLICKS_RESET):
            if task.item in CLICKS_SEND:
                self._message(task.user_data if task.user_data is not None else self.draft)
        elif task.action == "click":
            super().check(task)
        elif task.action == "select_list_item" and task.item in ("profiles", "models"):
            self._value("model", task.value)
        elif task.action == "push_event" and task.item == "user_request":
            self._message(task.value.get("prompt"))
        elif task.action != "replace_session":
            super().check(task)

    def _buttons(self) -> str:
        return ("Buttons here: " + ", ".join((*CLICKS_SEND, *CLICKS_CANCEL, *CLICKS_RESET)) + ", "
                + super()._buttons().removeprefix("Buttons here: "))

    def _message(self, text: Any) -> str:
        if not isinstance(text, str) or not text.strip():
            raise GuiError("there is no message to send", 'Pass it as user_data (click("btn_gen_send", '
                           'user_data="...")) or set the ai_input field first.')
        if len(text) > MAX_MESSAGE_CHARS:
            raise GuiError(f"the message has {len(text):,} characters; at most {MAX_MESSAGE_CHARS:,}", "Send less.")
        return text

    def _value(self, item: str, value: Any) -> Any:
        """``value`` checked for ``item``, in the form it is applied; a :class:`GuiError` otherwise."""
        session = self.shell.session
        if item in ("model", "profile"):
            if not isinstance(value, str) or not value.strip():
                raise GuiError(f"{item} must be a profile name or model id, got {value!r}", 'e.g. "gpt-4o".')
            try:
                return session.config.model.resolve(value.strip())
            except ModelConfigError as exc:
                raise GuiError(f"{item}: {exc}", "Name a [model.profiles] entry of codeward.toml.") from None
        if item == "auto_approve":
            patterns = _strings(item, value)
            wider = [p for p in patterns if p not in self.ceiling_auto_approve]
            if wider:
                raise GuiError(f"auto_approve: {', '.join(map(repr, wider))} would let calls run without asking, "
                               f"beyond this run's list ({', '.join(self.ceiling_auto_approve) or 'empty'})",
                               WIDENING_HINT + " ([mcp] auto_approve, or --auto-approve)", status=403)
            return tuple(dict.fromkeys(patterns))
        if item == "max_tool_depth":
            depth = _config_value("max_tool_depth", value)
            if depth > self.ceiling_depth:
                raise GuiError(f"max_tool_depth {depth} is more than this run's {self.ceiling_depth}",
                               WIDENING_HINT + " ([mcp] max_tool_depth)", status=403)
            return depth
        if item == "tracked_files":
            from codeward.apps.agent.tracked import TrackedFiles

            paths = _strings(item, value)
            trial = TrackedFiles(self.shell.tracked.base, self.shell.tracked.base_dirs)
            _, problems = trial.add(paths)
            if problems:
                raise GuiError("tracked_files: " + "; ".join(problems),
                               "Name files inside the workspace roots (paths or globs relative to the primary root).")
            return paths
        if item == "system_prompt":
            if not isinstance(value, str) or not value.strip():
                raise GuiError("system_prompt must be a non-empty string", "Send the prompt's text.")
            if len(value) > MAX_PROMPT_CHARS:
                raise GuiError(f"system_prompt has {len(value):,} characters; at most {MAX_PROMPT_CHARS:,}",
                               "Shorten it.")
            return value
        if item == "toolsets":
            return self._toolsets(value)
        if item == "ai_input":
            if not isinstance(value, str):
                raise GuiError(f"ai_input must be a string, got {type(value).__name__}", 'e.g. "fix the tests".')
            return value
        raise GuiError(f"no field {item!r}", f"Settable fields: {', '.join(FIELDS)}.", status=404)

    def _toolsets(self, value: Any) -> tuple[str, ...] | None:
        from codeward.apps.agent.session import choice_problem

        ceiling = self.ceiling_toolsets
        if value is None:
            if ceiling is not None:
                raise GuiError(f"toolsets: this run offers only {', '.join(ceiling)}; all of them would be more",
                               WIDENING_HINT + " (--toolsets)", status=403)
            return None
        names = tuple(dict.fromkeys(_strings("toolsets", value)))
        session = self.shell.session
        trial = replace(session, choice=replace(session.choice, toolsets=names))
        problem = choice_problem(trial)
        if problem is not None:
            raise GuiError(problem.replace("--toolsets", "toolsets", 1), "GET /api/gui/value/toolsets shows the "
                           "current choice.")
        if ceiling is not None and not set(names) <= set(ceiling):
            extra = [n for n in names if n not in ceiling]
            raise GuiError(f"toolsets: {', '.join(extra)} not offered in this run (only {', '.join(ceiling)})",
                           WIDENING_HINT + " (--toolsets)", status=403)
        return names

    # -- applying (on the session's loop) ----------------------------------------------------------

    async def apply(self, task: GuiTask) -> None:
        shell = self.shell
        if task.action == "set_value":
            await self._set(task.item, self._value(task.item, task.value))
        elif task.action == "click" and task.item in CLICKS_SEND:
            text = self._message(task.user_data if task.user_data is not None else self.draft)
            self.draft = ""
            shell.post(text)
        elif task.action == "click" and task.item in CLICKS_CANCEL:
            shell.cancel_turn()
        elif task.action == "click" and task.item in CLICKS_RESET:
            shell.cancel_turn()
            shell.post(":reset")
        elif task.action == "select_list_item" and task.item in ("profiles", "models"):
            await self._set("model", self._value("model", task.value))
        elif task.action == "push_event" and task.item == "user_request":
            shell.post(self._message(task.value.get("prompt")))
        elif task.action == "replace_session":
            turns = list(task.value)
            shell.post(lambda: shell.replace_conversation(turns))
        else:
            await super().apply(task)
        self.state.events.publish("gui_values", values=self.values())

    async def _set(self, item: str, value: Any) -> None:
        shell = self.shell
        session = shell.session
        if item in ("model", "profile"):
            session.switch_model(value)
            await session.learn_window()
            self.state.set_project({**self.state.project(), "model": value.model, "profile": value.name})
        elif item == "auto_approve":
            approval = session.stack.approval
            if approval is not None:
                approval.policy = replace(approval.policy, auto_approve=value)
        elif item == "max_tool_depth":
            session.settings.max_tool_depth = value
        elif item == "tracked_files":
            shell.tracked.drop(shell.tracked.paths())
            if value:
                shell.add_files(value)
            else:
                shell.log.record_meta("tracked", [])
        elif item == "system_prompt":
            shell.conversation.system = value
        elif item == "toolsets":
            session.choice = replace(session.choice, toolsets=value)
        elif item == "ai_input":
            self.draft = value


def _turns(entries: Any) -> list[Turn]:
    """Posted entries as turns a conversation can hold; a :class:`GuiError` names the first bad one."""
    from codeward.apps.agent.conversation import Turn

    if not isinstance(entries, list):
        raise GuiError("the session's 'entries' must be a list", 'Send {"session": {"entries": [...]}}.')
    if len(entries) > MAX_ENTRIES:
        raise GuiError(f"{len(entries):,} entries; at most {MAX_ENTRIES:,}", "Send fewer turns.")
    turns: list[Turn] = []
    pending: set[str] = set()
    hint = ('Each entry is {"role": "user"|"assistant"|"tool", "content": "..."}; an assistant turn may carry '
            '"tool_calls" ([{"id", "name", "arguments"}]), each answered by a tool turn with its "tool_call_id".')
    for index, entry in enumerate(entries, 1):
        role = entry.get("role") if isinstance(entry, dict) else None
        if role not in ("user", "assistant", "tool") or not isinstance(entry.get("content", ""), str):
            raise GuiError(f"entry {index}: needs a role of user, assistant or tool and text content", hint)
        try:
            turn = Turn.from_dict(entry)
        except (TypeError, KeyError, ValueError) as exc:
            raise GuiError(f"entry {index}: {exc}", hint) from None
        if role == "assistant":
            if not (turn.content or turn.tool_calls):
                raise GuiError(f"entry {index}: an assistant turn needs content or tool_calls", hint)
            pending = {call.id for call in turn.tool_calls}
        elif role == "tool":
            if turn.tool_call_id not in pending:
                raise GuiError(f"entry {index}: tool turn answers {turn.tool_call_id!r}, which no earlier assistant "
                               "turn called (or it was answered already)", hint)
            pending.discard(turn.tool_call_id)
        else:
            pending = set()
        turns.append(turn)
    return turns


def _strings(item: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise GuiError(f"{item} must be a list of non-empty strings, got {value!r}", f'e.g. "{item}": ["name"].')
    return [v.strip() for v in value]


def _config_value(key: str, value: Any) -> Any:
    """``value`` checked by the typed config's own rule for ``[mcp] key``."""
    from pydantic import ValidationError

    if isinstance(value, bool):
        raise GuiError(f"{key} must be an integer, got {value!r}", f"e.g. {key} = 8.")
    try:
        checked = GatewayConfig.model_validate({key: value})
    except ValidationError as exc:
        reason = exc.errors()[0].get("msg", str(exc))
        raise GuiError(f"{key}: {reason} (got {value!r})", f"Send an integer, as [mcp] {key} in codeward.toml takes."
                       ) from None
    return getattr(checked, key)
