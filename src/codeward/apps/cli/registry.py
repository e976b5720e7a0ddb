"""``codeward registry search|load|run|sign|publish|pull|help|new|key|trust`` and ``codeward sign NAME``.

A thin layer: each command calls the same meta-tool a model would (through a catalog of the
four), with the built-in tools served alongside so ``search``, ``help`` and ``run`` cover them
too; ``new`` writes a scaffold that validates as written. A command typed here is a person's
act: ``sign`` signs with the user's key, and ``run`` installs a tool's declared packages the
first time, without asking again. ``key`` shows the user's public key (to give to teammates);
``trust`` manages the teammates' keys whose signatures count here.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from codeward.apps.cli.args import parse_assignments
from codeward.apps.cli.common import configs_of
from codeward.apps.cli.output import add_json_argument, command_name, print_json, print_outcome, result_object
from codeward.apps.cli.parser import quiet
from codeward.apps.cli.tool_hints import for_the_terminal
from codeward.config.registry import RegistrySettings
from codeward.serving.stack import build_stack

KINDS = ("tool", "directive", "knowledge")
SPACES = ("project", "user", "hub")


class StderrReporter:
    """Progress and log lines of a command, on stderr (``quiet``: warnings and errors only)."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        if message and not self.quiet:
            print(f"codeward: {message}", file=sys.stderr, flush=True)

    def log(self, level: str, message: str) -> None:
        if level not in ("debug",) and not (self.quiet and level == "info"):
            print(f"codeward: {message}", file=sys.stderr, flush=True)


def register(subparsers: Any) -> None:
    """Register ``registry`` (with its subcommands) and ``sign`` on the top-level parser."""
    registry = subparsers.add_parser("registry", help="tools, directives and knowledge in .ai/ and ~/.ai/",
                                     description="Search, read, copy, run, sign and create registry items.")
    commands = registry.add_subparsers(title="registry commands", metavar="COMMAND")

    search = _command(commands, "search", "find items and tools by meaning (BM25)")
    search.add_argument("query", nargs="*", help="words to look for (none: list everything)")
    search.add_argument("--kind", choices=("all", *KINDS), default="all")
    search.add_argument("--source", choices=("all", "project", "user", "hub", "served"), default="all")
    search.add_argument("--limit", type=int, default=20)
    search.set_defaults(handler=_search)

    load = _command(commands, "load", "print an item; --to copies it between project and user space")
    load.add_argument("name")
    load.add_argument("--kind", choices=KINDS)
    load.add_argument("--source", choices=SPACES)
    load.add_argument("--to", dest="destination", choices=SPACES, help="copy the item there first")
    load.add_argument("--overwrite", action="store_true", help="replace an item of the same name there")
    load.set_defaults(handler=_load)

    run = _command(commands, "run", "run a tool: codeward registry run NAME key=value ...")
    run.add_argument("name")
    run.add_argument("arguments", nargs="*", metavar="key=value", help="parameters (JSON values where not strings)")
    run.rest_dest = "arguments"  # type: ignore[attr-defined]  # a CodewardParser (cli/parser.py)
    run.add_argument("--params", help="all parameters as one JSON object")
    run.add_argument("--dry-run", action="store_true", help="check and show the plan without running")
    run.add_argument("--timeout", type=float)
    run.add_argument("--source", choices=SPACES)
    run.set_defaults(handler=_run)

    for parent, name in ((commands, "sign"), (subparsers, "sign")):
        sign = _command(parent, name, "validate an item and sign it (it runs only while unmodified)")
        sign.add_argument("name")
        sign.add_argument("--source", choices=SPACES)
        sign.set_defaults(handler=_sign)

    publish = _command(commands, "publish", "copy a signed item to the hub (CODEWARD_REGISTRY_HUB)")
    publish.add_argument("name")
    publish.add_argument("--kind", choices=KINDS)
    publish.add_argument("--source", choices=("project", "user"))
    publish.add_argument("--overwrite", action="store_true", help="replace the published copy of this version")
    publish.set_defaults(handler=_publish)

    pull = _command(commands, "pull", "copy an item from the hub (it arrives unsigned: review, then sign)")
    pull.add_argument("name")
    pull.add_argument("--kind", choices=KINDS)
    pull.add_argument("--to", dest="destination", choices=("project", "user"), default="project")
    pull.add_argument("--overwrite", action="store_true", help="replace an item of the same name there")
    pull.set_defaults(handler=_pull)

    key = _command(commands, "key", "show your public signing key (made on your first signature)")
    key.add_argument("--create", action="store_true", help="make the key now if there is none")
    key.add_argument("--name", default="", help="the name the new key is known by (default: user@host)")
    key.set_defaults(handler=_key)

    trust = _command(commands, "trust", "the keys whose signatures count here: list, add, remove")
    trust.add_argument("action", choices=("list", "add", "remove"), nargs="?", default="list")
    trust.add_argument("key", nargs="?", help="add: a public key line (codeward-ed25519 ...) or a .pub file; "
                       "remove: a key id or name")
    trust.add_argument("--name", default="", help="add: who the key belongs to (shown with what it signed)")
    trust.set_defaults(handler=_trust)

    help_ = _command(commands, "help", "explain a tool or item, or give an overview")
    help_.add_argument("name", nargs="?")
    help_.add_argument("--kind", choices=KINDS)
    help_.set_defaults(handler=_help)

    new = _command(commands, "new", "create a valid item file to edit (then sign it)")
    new.add_argument("name")
    new.add_argument("--kind", choices=KINDS, default="tool")
    new.add_argument("--type", dest="tool_type", choices=("python", "api"), default="python",
                     help="for tools: python (runs main) or api (an HTTP request)")
    new.add_argument("--category", default="", help="folder and category (default: utility / general)")
    new.add_argument("--description", default="", help="the one-line description")
    new.add_argument("--user", action="store_true", help="create it in the user space instead of the project")
    new.set_defaults(handler=_new)


def _command(commands: Any, name: str, text: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(name, help=text, description=text)
    parser.add_argument("--root", action="append", help="project root (default: config roots or the current folder)")
    add_json_argument(parser)
    return parser


def _context(args: argparse.Namespace) -> Any:
    """A direct-call context from the stack every command builds: same roots, policy and services.

    Its served tools (what ``search``, ``help`` and ``run`` reach besides the registry) are the
    configured native tools."""
    config, gateway = configs_of(args)
    stack = build_stack(config, args.root or (), gateway=gateway)
    return stack.context(reporter=StderrReporter(quiet(args)))


def _call(args: argparse.Namespace, tool: str, arguments: dict[str, Any]) -> int:

    from codeward.approval.policy import by_person
    from codeward.tools.meta import meta_catalog

    ctx = by_person(_context(args), writes=True)  # typed by the person at the terminal
    outcome = meta_catalog().call(tool, {k: v for k, v in arguments.items() if v is not None}, ctx)
    return print_outcome(args, outcome, tool=tool)


def _search(args: argparse.Namespace) -> int:
    return _call(args, "registry_search", {"query": " ".join(args.query), "kind": args.kind, "source": args.source,
                                           "limit": args.limit})


def _load(args: argparse.Namespace) -> int:
    return _call(args, "registry_load", {"name": args.name, "kind": args.kind, "source": args.source,
                                         "destination": args.destination, "overwrite": args.overwrite})


def _publish(args: argparse.Namespace) -> int:
    return _call(args, "registry_load", {"name": args.name, "kind": args.kind, "source": args.source,
                                         "destination": "hub", "overwrite": args.overwrite})


def _pull(args: argparse.Namespace) -> int:
    return _call(args, "registry_load", {"name": args.name, "kind": args.kind, "source": "hub",
                                         "destination": args.destination, "overwrite": args.overwrite})


def _run(args: argparse.Namespace) -> int:

    params: dict[str, Any] = {}
    if args.params:
        try:
            loaded = json.loads(args.params)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--params is not JSON: {exc}; e.g. --params '{{\"name\": \"x\"}}'") from exc
        if not isinstance(loaded, dict):
            raise ValueError("--params must be a JSON object, e.g. '{\"name\": \"x\"}'")
        params.update(loaded)
    params.update(parse_assignments(args.arguments, _schema_for(args)))
    return _call(args, "registry_execute", {"name": args.name, "action": "run", "params": params,
                                            "dry_run": args.dry_run, "timeout": args.timeout,
                                            "source": args.source})


def _schema_for(args: argparse.Namespace) -> dict[str, Any]:
    from codeward.engines.registry.items import Kind
    from codeward.engines.registry.service import Registry

    ctx = _context(args)
    found = Registry(ctx.workspace, ctx.services.get(RegistrySettings)).find(args.name, Kind.TOOL)
    schema = found.data.meta.get("config_schema") if found.ok and found.data is not None else None
    return schema if isinstance(schema, dict) else {}


def _sign(args: argparse.Namespace) -> int:
    return _call(args, "registry_execute", {"name": args.name, "action": "sign", "source": args.source})


def _key(args: argparse.Namespace) -> int:
    from codeward.engines.registry.keys import SigningKeyError

    keys = _keys(args)
    own = keys.own()
    if own is None and args.create:
        try:
            own = keys.create(args.name)
        except (SigningKeyError, OSError) as exc:
            print(f"codeward: {exc}", file=sys.stderr)
            return 1
        print(f"codeward: made your signing key {keys.private_path} (keep it private)", file=sys.stderr)
    if own is None:
        print(f"You have no signing key yet ({keys.folder}); `codeward sign NAME` or `codeward registry key "
              "--create` makes one.", file=sys.stderr)
        return 1
    if args.json:
        print_json(result_object(command_name(args), text=own.line(),
                                 structured={"key": own.line(), "id": own.key_id, "name": own.name}))
        return 0
    print(own.line())
    print(f"id {own.key_id}; give the line above to teammates: `codeward registry trust add \"{own.line()}\"`",
          file=sys.stderr)
    return 0


def _trust(args: argparse.Namespace) -> int:
    from pathlib import Path

    from codeward.engines.registry.keys import PublicKey, SigningKeyError

    keys = _keys(args)
    try:
        if args.action == "list":
            own = keys.own()
            found = keys.trusted()
            if args.json:
                print_json([{"id": key.key_id, "name": key.name, "yours": own is not None and key.key_id == own.key_id}
                            for key in found.values()])
                return 0
            if not found:
                print("No keys are trusted yet: sign something (`codeward sign NAME`) to make yours, and add "
                      "teammates' with `codeward registry trust add \"codeward-ed25519 ...\" --name THEM`.")
            for key in found.values():
                mine = " (yours)" if own is not None and key.key_id == own.key_id else ""
                print(f"{key.key_id}  {key.name}{mine}")
            return 0
        if not args.key:
            raise SigningKeyError(f"`trust {args.action}` needs a key: "
                                  + ("a public key line or a .pub file" if args.action == "add" else "an id or name"))
        if args.action == "add":
            text = args.key
            if not text.startswith("codeward-ed25519") and Path(text).is_file():
                text = Path(text).read_text(encoding="ascii")
            key = PublicKey.parse(text, args.name)
            if not key.name:
                raise SigningKeyError("name the key: --name alice (shown with everything it signs)")
            path = keys.trust(key)
            return _said(args, f"Trusted {key.shown()}: items it signs now run here ({path}).",
                         {"id": key.key_id, "name": key.name, "trusted": True})
        removed = keys.untrust(args.key)
        return _said(args, f"No longer trusted: {removed.shown()}; what it signed no longer runs here.",
                     {"id": removed.key_id, "name": removed.name, "trusted": False})
    except (SigningKeyError, OSError, UnicodeDecodeError) as exc:
        if args.json:
            print_json(result_object(command_name(args), text=str(exc), is_error=True))
        print(f"codeward: {exc}", file=sys.stderr)
        return 1


def _said(args: argparse.Namespace, text: str, structured: dict[str, Any]) -> int:
    """A command's one-line result: the line, or with ``--json`` the result object."""
    if args.json:
        print_json(result_object(command_name(args), text=text, structured=structured))
    else:
        print(text)
    return 0


def _keys(args: argparse.Namespace) -> Any:
    from codeward.engines.registry.settings import key_store

    return key_store(_context(args).services.get(RegistrySettings))


def _help(args: argparse.Namespace) -> int:
    return _call(args, "registry_help", {"name": args.name, "kind": args.kind})


def _new(args: argparse.Namespace) -> int:
    from codeward.engines.registry.items import Kind, Space
    from codeward.engines.registry.scaffold import scaffold
    from codeward.engines.registry.service import Registry

    ctx = _context(args)
    registry = Registry(ctx.workspace, ctx.services.get(RegistrySettings))
    kind = Kind(args.kind)
    space = Space.USER if args.user else Space.PROJECT
    category = args.category or ("utility" if kind is Kind.TOOL else "")
    text = scaffold(kind, args.name, tool_type=args.tool_type, category=category, description=args.description)
    created = registry.create(args.name, kind, space, text, category)
    if not created.ok:
        if args.json:
            print_json(result_object(command_name(args), text=created.error_text(), is_error=True,
                                     errors=created.errors))
        print(for_the_terminal(created.error_text()), file=sys.stderr)
        return 1
    shown = registry.spaces.display(created.data, space)
    after = f"then sign it: codeward sign {args.name}" + (f" --root {args.root[0]}" if args.root else "")
    return _said(args, f"Created {shown}. Edit it, {after}", {"path": str(created.data), "kind": kind.value,
                                                             "space": space.value})
