"""``codeward tools``: the tool list, as text, MCP JSON or the generated ``docs/tools.md``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from codeward.apps.cli.common import configs_of
from codeward.apps.docs import tools_markdown
from codeward.kernel.surface import CatalogSurface
from codeward.serving.stack import catalog_for
from codeward.tools import OPT_IN_TOOLSETS, default_catalog


def register(sub: Any) -> None:
    tools = sub.add_parser("tools", help="list the tools")
    fmt = tools.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the MCP tool list as JSON")
    fmt.add_argument("--markdown", action="store_true", help="print docs/tools.md")
    tools.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.markdown:  # the reference documents every tool, the toolsets a server offers only when asked too
        sys.stdout.write(tools_markdown(default_catalog()))
        return 0
    config, _gateway = configs_of(args)
    catalog = catalog_for(config)
    if args.json:
        infos = CatalogSurface(catalog).tool_infos()
        specs = {spec.name: spec for spec in catalog}
        print(json.dumps([{"name": i.name, "description": i.description, "inputSchema": i.input_schema,
                           "annotations": i.annotations, "toolset": specs[i.name].toolset,
                           "examples": list(specs[i.name].examples)}
                          for i in infos], indent=2))
        return 0
    width = max((len(s.name) for s in catalog), default=0)
    for spec in catalog:
        summary = spec.description.splitlines()[0]
        print(f"{spec.name:<{width}}  [{spec.toolset}] {summary}")

    unserved = sorted(OPT_IN_TOOLSETS - set(catalog.toolsets()))
    if unserved and config.toolsets is None:
        print(f"(not served unless [server] toolsets names them, or is [\"all\"]: {', '.join(unserved)})")
    return 0
