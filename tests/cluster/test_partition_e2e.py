"""A Mind cut off from PostgreSQL (issue 40's partition test): real Mind processes, a real
server, and a TCP proxy between one Mind and the server that stops forwarding.

The cut-off Mind gives its conversation up on its own monotonic clock before the lease can be
taken on the database's; the other Mind takes it over and resumes it; when the link comes
back, the writes the cut-off Mind still had in flight are refused by the lease's epoch, nothing
is lost or written twice, and the Mind serves again.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from helpers.eventually import eventually_async
from helpers.face_process import MindDirect
from helpers.mind_process import MindProcess
from helpers.shared_database import SharedDatabase, shared_database
from helpers.store_backend import rows
from helpers.tcp_proxy import TcpProxy, tcp_proxy
from sqlalchemy.engine import make_url

pytestmark = pytest.mark.e2e
LEASE_SECONDS = 2.0
SCRIPT = """
runs:
  - match: "^slow"
    steps:
      - {delay: 6, text: "the slow reply"}
  - match: ".*"
    steps:
      - text: "ok"
"""
LET_GO = "no longer serves conversation p_cut"


@pytest.fixture
def database() -> Iterator[SharedDatabase]:
    with shared_database() as shared:
        yield shared


@pytest.fixture
def proxy(database: SharedDatabase) -> Iterator[TcpProxy]:
    url = make_url(database.url)
    with tcp_proxy(url.host or "127.0.0.1", url.port or 5432) as started:
        yield started


@pytest.fixture
def minds(tmp_path: Path, database: SharedDatabase, proxy: TcpProxy) -> Iterator[list[MindProcess]]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    through_proxy = (
        make_url(database.url)
        .set(host="127.0.0.1", port=proxy.port)
        .render_as_string(hide_password=False)
    )
    started = []
    for name, url in (("mind-a", through_proxy), ("mind-b", database.url)):
        mind = database.mind(
            tmp_path / name,
            script,
            TOBE_MIND__NODE_ID=name,
            TOBE_MIND__LEASE_SECONDS=str(LEASE_SECONDS),
            TOBE_DATABASE_URL=url,
        )
        started.append(mind)
    try:
        for mind in started:
            mind.start()
        yield started
    finally:
        proxy.mend()
        for mind in started:
            if mind.process is not None and mind.process.poll() is None:
                mind.process.send_signal(signal.SIGCONT)
            mind.kill()


def _logged_at(line: str) -> datetime:
    """The local time a log line was written (`YYYY-MM-DD HH:MM:SS,mmm …`)."""
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")


def _taken_at(url: str) -> datetime:
    """When mind b took p_cut, on the database's clock (local time, as the logs write it)."""
    [(expires,)] = rows(
        url,
        "SELECT expires_at FROM conversation_leases WHERE conversation_key = ? "
        "AND node_id = 'mind-b'",
        "p_cut",
    )
    taken = datetime.fromisoformat(str(expires)) - timedelta(seconds=LEASE_SECONDS)
    return taken.astimezone().replace(tzinfo=None)


async def test_a_cut_off_mind_lets_go_before_its_lease_is_taken_and_its_late_writes_are_refused(
    minds: list[MindProcess], database: SharedDatabase, proxy: TcpProxy
) -> None:
    first, second = minds
    a, b = MindDirect(first), MindDirect(second)
    url = database.url
    states = lambda: rows(url, "SELECT state FROM runs WHERE conversation_key = ?", "p_cut")  # noqa: E731
    try:
        await a.create("p_cut")
        await a.send("p_cut", "slow one")
        proxy.cut()

        [let_go] = await eventually_async(
            lambda: [line for line in first.output if LET_GO in line], what="mind a to let go"
        )
        await eventually_async(
            states, until=lambda found: found == [("interrupted",)], what="mind b's takeover"
        )
        # Mind a stopped serving before mind b could take the conversation over.
        assert _logged_at(let_go) < _taken_at(url)
        [(node_id, epoch)] = rows(
            url,
            "SELECT node_id, epoch FROM conversation_leases WHERE conversation_key = ?",
            "p_cut",
        )
        assert (node_id, epoch) == ("mind-b", 2)

        # The link comes back; what mind a still had in hand reaches the database and is
        # refused: no reply from the interrupted run, the run stays as mind b recorded it.
        proxy.mend()
        await asyncio.sleep(7)  # past the scripted reply's delay
        assert rows(url, "SELECT text FROM messages WHERE role = 'assistant'") == []
        assert states() == [("interrupted",)]

        # Mind a serves again: a conversation of its own, and p_cut through it (forwarded).
        await a.create("p_back")
        await a.send("p_back", "hello")
        await a.send("p_cut", "after the cut")
        await eventually_async(
            lambda: rows(
                url,
                "SELECT conversation_key, text FROM messages WHERE role = 'assistant' "
                "ORDER BY conversation_key",
            ),
            until=lambda found: found == [("p_back", "ok"), ("p_cut", "ok")],
            what="both replies",
        )
        owners = rows(url, "SELECT conversation_key, node_id FROM conversation_leases ORDER BY 1")
        assert owners == [("p_back", "mind-a"), ("p_cut", "mind-b")]
    finally:
        await a.close()
        await b.close()
