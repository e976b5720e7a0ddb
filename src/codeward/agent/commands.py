"""The ``chat`` and ``ask`` commands: argument handling around :mod:`codeward.agent.session`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import anyio

from codeward.agent.budget import CatalogChoice
from codeward.agent.conversation import Conversation
from codeward.agent.history import SessionLog, data_home, find_session, load_session, sessions_dir
from codeward.agent.loop import ToolLoop
from codeward.agent.render import PlainView
from codeward.agent.tracked import estimate_tokens
from codeward.config import Config
from codeward.control.plane import add_control_arguments, control_plane
from codeward.gateway.policy import ApprovalRequest


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="a [model.profiles] name, or a model id on OPENAI_BASE_URL")
    parser.add_argument("--root", action="append", help="workspace root (repeatable; default: config or cwd)")
    parser.add_argument("--auto-approve", action="append", default=[], metavar="PATTERN",
                        help="run matching tools without asking (exact name or glob such as 'git__*')")
    offered = parser.add_mutually_exclusive_group()
    offered.add_argument("--meta", action="store_true",
                         help="offer only the four meta-tools, which search, describe and call every tool "
                         "(default: the full catalog when it fits the model's context, else a trimmed one)")
    offered.add_argument("--toolsets", action="append", metavar="NAME[,NAME]",
                         help="offer only these toolsets (or gateway servers), e.g. files,python")
    add_control_arguments(parser)


def catalog_choice(args: argparse.Namespace) -> CatalogChoice:
    """``--meta`` / ``--toolsets`` as a choice (names split on commas, blanks dropped)."""
    toolsets = None
    if args.toolsets is not None:
        toolsets = tuple(dict.fromkeys(n.strip() for each in args.toolsets for n in each.split(",") if n.strip()))
    return CatalogChoice(meta=args.meta, toolsets=toolsets)


def run_chat(args: argparse.Namespace, config: Config, catalog: Any) -> int:
    return anyio.run(_chat, args, config, catalog)


async def _chat(args: argparse.Namespace, config: Config, catalog: Any) -> int:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from rich.console import Console

    from codeward.agent.session import open_session
    from codeward.agent.shell import ChatShell

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

    async with control_plane(args, "chat") as plane, open_session(
            config, catalog, model=args.model, confirm=plane.approvals(confirm, notify=note), roots=args.root or (),
            auto_approve=args.auto_approve, choice=catalog_choice(args)) as session:
        if args.resume is not None:
            path = find_session(sessions_dir(), args.resume or None)
            log, conversation = load_session(path, session.profile.use_tool_role)
        else:
            conversation = Conversation(session.system_prompt(), use_tool_role=session.profile.use_tool_role)
            log = SessionLog.create(sessions_dir(), model=session.profile.model, system=conversation.system)
        conversation.listeners.append(log.record)
        shell = ChatShell(session, conversation, log, Console(highlight=False), ask)
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
        try:
            await shell.run()
        finally:
            log.close()
    return 0


def run_ask(args: argparse.Namespace, config: Config, catalog: Any) -> int:
    return anyio.run(_ask, args, config, catalog)


async def _ask(args: argparse.Namespace, config: Config, catalog: Any) -> int:
    from codeward.agent.session import open_session

    async def deny(request: ApprovalRequest) -> bool:
        print(f"[codeward] denied {request.summary(120)}: not auto-approved (use --auto-approve)",
              file=sys.stderr, flush=True)
        return False

    def note(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    async with control_plane(args, "ask") as plane, open_session(
            config, catalog, model=args.model, confirm=plane.approvals(fallback=deny, notify=note),
            roots=args.root or (), auto_approve=args.auto_approve, choice=catalog_choice(args)) as session:
        conversation = Conversation(session.system_prompt(), use_tool_role=session.profile.use_tool_role)
        plane.watch_agent(session, conversation)
        view = PlainView()
        surface, plan = session.offer(args.question, estimate_tokens(conversation.system + args.question))
        if plan.form != "full":
            view.notice(plan.summary())
        result = await ToolLoop(session.client, surface, conversation, view, session.context,
                                session.settings).run(args.question)
    answer = "" if result.unparsed else "".join(view.answer) or result.text
    if answer:
        print(answer.strip())
    return 0 if result.ok else 1
