"""``codeward chat``: the interactive agent shell over any OpenAI-compatible model."""

from __future__ import annotations

import argparse
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from codeward.apps.cli.args import add_agent_arguments, catalog_choice, config_of, control_options
from codeward.apps.cli.parser import quiet
from codeward.kernel.user_dirs import data_home

if TYPE_CHECKING:
    from codeward.approval.policy import ApprovalRequest
    from codeward.config import Config


def register(sub: Any) -> None:
    chat = sub.add_parser("chat", help="talk to a model that uses the tools (interactive)",
                          description="An interactive agent shell over any OpenAI-compatible model.")
    add_agent_arguments(chat)
    chat.add_argument("--resume", nargs="?", const="", metavar="ID",
                      help="continue a saved session (default: the latest)")
    chat.add_argument("--add", nargs="+", metavar="PATH", help="track these files (paths or globs) from the start")
    chat.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return run_chat(args, config_of(args))


def run_chat(args: argparse.Namespace, config: Config) -> int:
    return anyio.run(_chat, args, config)


async def _chat(args: argparse.Namespace, config: Config) -> int:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from rich.console import Console

    from codeward.apps.agent.conversation import Conversation
    from codeward.apps.agent.history import SessionLog, find_session, load_session, sessions_dir
    from codeward.apps.agent.progress_lines import ProgressLines
    from codeward.apps.agent.session import open_session
    from codeward.apps.agent.shell import ChatShell
    from codeward.apps.control.plane import control_plane

    home = data_home()
    home.mkdir(parents=True, exist_ok=True)
    prompt = PromptSession[str](history=FileHistory(str(home / "input_history")))

    async def ask(text: str) -> str:
        return await prompt.prompt_async(text)

    holder: dict[str, ChatShell] = {}

    async def confirm(request: ApprovalRequest) -> bool:
        return await holder["shell"].confirm(request)

    def note(text: str) -> None:
        holder["shell"].console.print(text, style="yellow", markup=False, highlight=False)

    async with control_plane(control_options(args), "chat") as plane, open_session(
            config, model=args.model, confirm=plane.approvals(confirm, notify=note), roots=args.root or (),
            auto_approve=args.auto_approve, observers=plane.middleware(), choice=catalog_choice(args)) as session:
        if args.resume is not None:
            path = find_session(sessions_dir(), args.resume or None)
            log, conversation = load_session(path, session.profile.use_tool_role)
        else:
            conversation = Conversation(session.system_prompt(), use_tool_role=session.profile.use_tool_role)
            log = SessionLog.create(sessions_dir(), model=session.profile.model, system=conversation.system)
        conversation.listeners.append(log.record)
        shell = ChatShell(session, conversation, log, Console(highlight=False), ask)
        if not quiet(args):
            shell.progress = partial(ProgressLines, session.profile.model, until_text=True)
        holder["shell"] = shell
        plane.watch_agent(session, conversation, chat_session=log.session_id)
        shell.command_runner = plane.command_runner(shell.command_runner)
        if args.resume is not None:
            restored, problems = shell.tracked.add(log.meta.get("tracked", []))
            for problem in problems:
                shell.console.print(f"[red]{problem}[/]", highlight=False)
            shell.console.print(f"resumed {log.session_id}: {len(conversation.turns)} turns"
                                + (f", tracking {', '.join(restored)}" if restored else ""), highlight=False)
        if getattr(args, "add", None):
            shell.add_files(args.add)
        plane.drive_chat(shell)
        try:
            await shell.run()
        finally:
            shell.log.close()
    return 0
