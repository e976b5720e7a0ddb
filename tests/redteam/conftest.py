"""Fixtures of the red-team suite: ``host`` is one attack's world, run as root and as a user."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redteam.harness import Host, principal

PRINCIPALS = ("root", "user")


@pytest.fixture(params=PRINCIPALS)
def host(request: pytest.FixtureRequest) -> Iterator[Host]:
    """A fresh project served as root and, in a second run, as the unprivileged user.

    After the test the host is checked (unless the test did so itself with ``assert_clean``):
    any violation fails the test at teardown with the list of what the attack reached.
    """
    world = Host.create(principal(request.param))
    try:
        yield world
        if not world.checked:
            world.assert_clean()
    finally:
        world.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
