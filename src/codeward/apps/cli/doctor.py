"""``codeward doctor``: which sandbox each executor will use here, and why — or what to install."""

from __future__ import annotations

import argparse
from typing import Any

from codeward.apps.cli.common import configs_of
from codeward.apps.cli.output import add_json_argument, command_name, print_json


def register(sub: Any) -> None:
    doctor = sub.add_parser("doctor", help="check the sandbox: which backend each executor will use, and why",
                            description="Check what this machine can contain (bubblewrap, user namespaces, "
                            "overlays, the disk cap, cgroups, seccomp, slirp4netns, Docker) and say which backend "
                            "run_shell, run_tests, code execution, the review's analyzers and registry tools will "
                            "use — or the refusal they will give, with the command that fixes it. Exits 1 when an "
                            "executor would refuse.")
    add_json_argument(doctor, "print the checks and the executors' backends as one JSON object")
    doctor.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from codeward.engines.sandbox.choice import BackendChoice
    from codeward.engines.sandbox.doctor import diagnose

    config, _gateway = configs_of(args)
    choice = BackendChoice(config.sandbox.backend, config.coding.backend, config.sandbox.disk_mb)
    diagnosis = diagnose(choice, config.sandbox.disk_mb, shell_sandbox=config.shell.sandbox,
                         egress=config.network)
    if args.json:
        print_json({"command": command_name(args), **diagnosis.to_dict()})
    else:
        print(diagnosis.render())
    return 0 if diagnosis.ok else 1
