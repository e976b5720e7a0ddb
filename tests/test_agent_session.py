"""Assembling an agent session: clients the session made are all closed with it."""

from __future__ import annotations

from pathlib import Path

import anyio

from codeward.apps.agent.session import open_session
from codeward.config import load_config
from codeward.engines.llm.client import ModelClient


def test_switching_models_closes_every_client_when_the_session_ends(root: Path) -> None:
    (root / "codeward.toml").write_text(
        '[model]\ndefault = "one"\n'
        '[model.profiles.one]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m1"\n'
        '[model.profiles.two]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m2"\n', encoding="utf-8")
    config = load_config(cwd=root)
    made: list[ModelClient] = []

    async def run() -> None:
        async def deny(*_args: object) -> bool:
            return False

        async with open_session(config, model=None, confirm=deny, roots=[root]) as session:
            made.append(session.client)
            session.switch_model(config.model.resolve("two"))
            made.append(session.client)
            session.switch_model(config.model.resolve("one"))
            made.append(session.client)
            assert session.profile.model == "m1" and not any(client.closed for client in made)

    anyio.run(run)
    assert len(set(map(id, made))) == 3 and all(client.closed for client in made)
