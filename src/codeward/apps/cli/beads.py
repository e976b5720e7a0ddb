"""``codeward beads init``: create the Beads workspace the ``bd_*`` tools use."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from codeward.engines.beads.store import beads_init


def register(sub: Any) -> None:
    beads = sub.add_parser("beads", help="the Beads issue tracker workspace")
    beads_sub = beads.add_subparsers(title="beads commands", metavar="ACTION")
    beads_init = beads_sub.add_parser("init", help="create .beads/ in the project so the bd_* tools work")
    beads_init.add_argument("--root", default=".", help="project folder (default: .)")
    beads_init.add_argument("--prefix", help="issue id prefix (default: from the folder name)")
    beads_init.set_defaults(handler=init)


def init(args: argparse.Namespace) -> int:
    print(beads_init(Path(args.root).resolve(), args.prefix))
    return 0
