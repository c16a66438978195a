"""Remote-execution fixtures on top of the shared store fixtures (`database` per backend)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from remote_harness import CONVERSATION, HAND_SCOPES, Link, audience_of, remote_settings

from hand import Hand
from mind.credentials import issue, store_authenticator
from mind.credentials.interceptor import AuthInterceptor
from mind.remote.execution import RemoteExecution
from mind.remote.model import TaskRecord
from mind.remote.registry import Registry
from mind.store.database import Database
from mind.store.models import Conversation, Credential
from mind.store.write_tx import WriteTx
from tobe.config import RemoteSettings
from tobe.runtime.server import start_server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The directory a Hand under test works in."""
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture
async def conversation(database: Database) -> str:
    await database.write(lambda tx: tx.session.add(Conversation(key=CONVERSATION, owner="alice")))
    return CONVERSATION


@pytest.fixture
def registry(database: Database, conversation: str) -> Registry:
    return Registry(database)


@pytest.fixture
def link_settings(request: pytest.FixtureRequest) -> RemoteSettings:
    """Override per test with `@pytest.mark.parametrize("link_settings", [...], indirect=True)`."""
    return getattr(request, "param", None) or remote_settings()


@pytest.fixture
async def link(
    database: Database, conversation: str, link_settings: RemoteSettings
) -> AsyncIterator[Link]:
    sink: list[TaskRecord] = []

    async def collect(record: TaskRecord) -> None:
        sink.append(record)

    remote = RemoteExecution.build(
        database, link_settings, audience=audience_of, background_sink=collect
    )
    interceptor = AuthInterceptor(store_authenticator(database))
    server = await start_server(
        [remote.service_spec()], ["127.0.0.1:0"], interceptors=[interceptor]
    )
    port = server.bound["127.0.0.1:0"]

    def hand_credential(tx: WriteTx) -> tuple[Credential, str]:
        return issue(tx.session, kind="hand", principal="laptop", scopes=HAND_SCOPES)

    credential, token = await database.write(hand_credential)
    await remote.start()
    try:
        yield Link(
            f"127.0.0.1:{port}", token, credential.id, remote, database, sink, interceptor.live
        )
    finally:
        await remote.close()
        await server.stop(0)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Hand, str, str], Awaitable[asyncio.Task[None]]]]:
    """Start SDK Hands against a link; each is attached when returned, and stopped at the end."""
    jobs: list[asyncio.Task[None]] = []

    async def start(hand: Hand, target: str, token: str) -> asyncio.Task[None]:
        job = asyncio.create_task(hand.serve(target, token))
        jobs.append(job)
        attached = asyncio.create_task(hand.attached.wait())
        await asyncio.wait([job, attached], timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if job.done():
            attached.cancel()
            job.result()
        assert hand.attached.is_set(), "the Hand did not attach"
        return job

    try:
        yield start
    finally:
        for job in jobs:
            job.cancel()
            with contextlib.suppress(BaseException):
                await job
