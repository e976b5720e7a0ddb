"""``codeward ask QUESTION``: one question answered with tools; the answer on stdout, frames on stderr."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

import anyio

from codeward.apps.cli.args import add_agent_arguments, catalog_choice, config_of, control_options
from codeward.apps.cli.output import add_json_argument, print_json, result_object
from codeward.apps.cli.parser import quiet

if TYPE_CHECKING:
    from codeward.approval.policy import ApprovalRequest
    from codeward.config import Config


def register(sub: Any) -> None:
    ask = sub.add_parser("ask", help="one question, answered with tools (non-interactive)",
                         description="Ask once: the answer goes to stdout, tool frames to stderr; the exit "
                         "code says whether it worked. Calls the policy does not approve are denied.")
    ask.add_argument("question", help="what to ask")
    add_agent_arguments(ask)
    add_json_argument(ask, "print the answer as one JSON object (docs/cli.md): text is the answer")
    ask.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return run_ask(args, config_of(args))


def run_ask(args: argparse.Namespace, config: Config) -> int:
    return anyio.run(_ask, args, config)


async def _ask(args: argparse.Namespace, config: Config) -> int:
    from codeward.apps.agent.conversation import Conversation
    from codeward.apps.agent.loop import ToolLoop
    from codeward.apps.agent.progress_lines import ProgressLines
    from codeward.apps.agent.render import PlainView
    from codeward.apps.agent.session import open_session
    from codeward.apps.agent.tracked import estimate_tokens
    from codeward.apps.cli.quiet_view import QuietView
    from codeward.apps.control.plane import control_plane

    async def deny(request: ApprovalRequest) -> bool:
        print(f"[codeward] denied {request.summary(120)}: not auto-approved (use --auto-approve)",
              file=sys.stderr, flush=True)
        return False

    def note(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    async with control_plane(control_options(args), "ask") as plane, open_session(
            config, model=args.model, confirm=plane.approvals(fallback=deny, notify=note),
            roots=args.root or (), auto_approve=args.auto_approve, observers=plane.middleware(),
            choice=catalog_choice(args)) as session:
        conversation = Conversation(session.system_prompt(), use_tool_role=session.profile.use_tool_role)
        plane.watch_agent(session, conversation)
        plane.drive(workspace=session.workspace)
        as_json = getattr(args, "json", False)
        view = QuietView() if quiet(args) else PlainView(stream_answer=not as_json and sys.stdout.isatty())
        progress = None if quiet(args) else ProgressLines(session.profile.model)
        surface, plan = session.offer(args.question, estimate_tokens(conversation.system + args.question))
        if plan.form != "full":
            view.notice(plan.summary())
        result = await ToolLoop(session.client, surface, conversation, view, session.context,
                                session.settings, progress=progress).run(args.question)
        if progress is not None and result.ok:
            progress.finished(result.rounds, result.tool_calls)
    answer = ("" if result.unparsed else "".join(view.answer) or result.text).strip()
    if getattr(args, "json", False):
        print_json(result_object("ask", text=answer, is_error=not result.ok,
                                 structured={"question": args.question, "model": session.profile.model,
                                             "rounds": result.rounds,
                                             "tool_calls": result.tool_calls, "failure": result.failure}))
    elif answer and not view.streamed:
        print(answer)
    return 0 if result.ok else 1
