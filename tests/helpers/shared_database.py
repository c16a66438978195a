"""One migrated PostgreSQL database that several Mind processes share, each with a data
directory (and so a node id) of its own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from helpers.mind_process import MindProcess, issue_token, mind_env
from helpers.postgres import fresh_postgres_database, postgres_server_url
from mind.store.migrate import upgrade


@dataclass
class SharedDatabase:
    """The database, with the gateway's and alice's credentials."""

    url: str
    gateway: str
    alice: str

    def mind(self, data_dir: Path, script: Path, **extra: str) -> MindProcess:
        """A Mind (not started) on this database, with a data directory of its own; `extra`
        settings (`TOBE_DATABASE_URL` too: the same database through a proxy)."""
        data_dir.mkdir(parents=True)
        env = mind_env(data_dir, script, **{"TOBE_DATABASE_URL": self.url, **extra})
        return MindProcess(data_dir, env, self.gateway, {"alice": self.alice})


def shared_database_at(url: str) -> SharedDatabase:
    """The empty database at `url`, migrated, with the gateway's and alice's credentials."""
    upgrade(url)
    gateway = issue_token(url, kind="service", principal="face", scopes=["gateway"])
    alice = issue_token(url, kind="client", principal="alice", scopes=["chat"])
    return SharedDatabase(url, gateway, alice)


@contextmanager
def shared_database() -> Iterator[SharedDatabase]:
    """A fresh database on the test server (`TOBE_TEST_PG_URL`), dropped afterwards."""
    with fresh_postgres_database(postgres_server_url()) as url:
        yield shared_database_at(url)
