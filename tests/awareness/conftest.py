"""Fixtures of the Awareness tests (helpers live in `awareness_harness`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from awareness_harness import AwarenessProcess, Client, new_process


@pytest.fixture
def awareness_dirs() -> Iterator[AwarenessProcess]:
    """A prepared, not yet started process (tests adjust env or adapters first)."""
    with new_process() as proc:
        yield proc


@pytest.fixture
def awareness(awareness_dirs: AwarenessProcess) -> AwarenessProcess:
    awareness_dirs.start()
    return awareness_dirs


@pytest.fixture(scope="module")
def shared_awareness() -> Iterator[AwarenessProcess]:
    """One process for a module's tests that only touch their own observations/adapters."""
    with new_process() as proc:
        proc.start()
        yield proc


@pytest.fixture
async def client(awareness: AwarenessProcess) -> AsyncIterator[Client]:
    c = Client(awareness.target)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def shared_client(shared_awareness: AwarenessProcess) -> AsyncIterator[Client]:
    c = Client(shared_awareness.target)
    try:
        yield c
    finally:
        await c.close()
