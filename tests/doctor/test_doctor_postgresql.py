"""`tobe doctor` on a PostgreSQL store: one line per thing the Minds rely on from the server,
each problem with its fix; on SQLite one `skip` line instead.

The server checks run against the real server of `TOBE_TEST_PG_URL` (they skip without it,
unless `TOBE_REQUIRE_PG=1`), each on a database of its own, with the bad setting made there
(`ALTER DATABASE … SET`, a role without advisory locks). The unreachable server, the cluster
settings and the lines no local server can produce are checked without one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from doctor_run import doctor_env, run_doctor
from helpers.ports import free_port
from helpers.postgres import fresh_postgres_database, postgres_server_url

from management.doctor.pg_room import connections_per_mind, encryption_finding
from management.doctor.pg_server import conninfo, refusal_fix
from management.doctor.postgresql import commit_fix, version_finding
from management.doctor.report import Status
from mind.store.engine import sync_url


def execute(url: str, *statements: str) -> list[tuple[object, ...]]:
    """Run `statements` on `url` (autocommit); the last one's rows."""
    with psycopg.connect(conninfo(url), autocommit=True) as connection:
        rows: list[tuple[object, ...]] = []
        for statement in statements:
            cursor = connection.execute(statement.encode())
            rows = cursor.fetchall() if cursor.description else []
        return rows


def show(url: str, name: str) -> str:
    [(value,)] = execute(url, f"SELECT setting FROM pg_settings WHERE name = '{name}'")
    return str(value)


def doctor_on(tmp_path: Path, url: str, **settings: str) -> tuple[int, dict[str, list[str]]]:
    return run_doctor(
        doctor_env(tmp_path / "data", tmp_path / "none.toml", TOBE_DATABASE_URL=url, **settings),
        every_finding=True,
    )


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_postgres_database(postgres_server_url()) as url:
        yield url


def test_each_server_check_gives_one_line_and_a_sound_server_passes_them(
    tmp_path: Path, database: str
) -> None:
    _status, findings = doctor_on(tmp_path, database)
    number = int(show(database, "server_version_num"))
    user = sync_url(database).username
    assert findings["pg version"] == [
        f"ok PostgreSQL {number // 10000}.{number % 10000} (11 or later)"
    ]
    assert findings["pg commit"] == [
        "ok synchronous_commit is on: what the Mind acknowledges is on disk"
    ]
    assert findings["pg notify"] == ["ok a NOTIFY reached its LISTEN"]
    assert findings["pg locks"] == [
        f"ok the role {user} takes session and transaction advisory locks"
    ]
    # The test server (scripts/start_test_postgres.sh) listens on loopback only, without TLS.
    assert findings["pg encryption"] == [
        "ok not encrypted, over loopback (127.0.0.1): nothing leaves this machine"
    ]
    # It also runs with fsync off, which is for throwaway servers only.
    if show(database, "fsync") == "off":
        assert findings["pg fsync"] == [
            "FAIL fsync is off: a crash of the server's machine can corrupt the database — fix: "
            "set fsync = on in postgresql.conf, then reload the server (off is for throwaway "
            "test servers)"
        ]
    else:
        assert findings["pg fsync"] == ["ok fsync is on"]
    assert "postgresql" not in findings


def test_connections_are_counted_from_the_stores_pools_and_the_servers_limit(
    tmp_path: Path, database: str
) -> None:
    limit = int(show(database, "max_connections"))
    reserved = int(show(database, "superuser_reserved_connections"))
    per_mind = connections_per_mind(database)
    # The store's write pool (8 + 8 overflow) and read pool (SQLAlchemy's 5 + 10).
    assert per_mind == 31
    room = (limit - reserved) // per_mind
    [line] = doctor_on(tmp_path, database)[1]["pg connections"]
    assert line.startswith(f"ok max_connections {limit} leaves {limit - reserved} for clients (")
    assert line.endswith(f" in use now); a Mind opens up to {per_mind}: room for {room}")

    # A Face that lists more Minds than fit: a FAIL naming how many connections they need.
    minds = json.dumps([f"mind-{n}.lan:7410" for n in range(room + 1)])
    [line] = doctor_on(tmp_path, database, TOBE_FACE__MIND_ADDRESSES=minds)[1]["pg connections"]
    assert line.startswith("FAIL ")
    assert line.endswith(
        f"room for {room}, and face.mind_addresses lists {room + 1} — fix: raise "
        f"max_connections to {(room + 1) * per_mind + reserved} or more (postgresql.conf or "
        "ALTER SYSTEM), then restart the server"
    )


def test_synchronous_commit_off_for_the_database_fails_naming_how_to_reset_it(
    tmp_path: Path, database: str
) -> None:
    name = sync_url(database).database
    execute(database, f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    status, findings = doctor_on(tmp_path, database)
    assert status == 1
    assert findings["pg commit"] == [
        "FAIL synchronous_commit is off (set by database): a commit returns before it is on "
        "disk, so a crash of the server loses messages the Mind already acknowledged — fix: "
        f"`ALTER DATABASE {name} RESET synchronous_commit` (as its owner or a superuser), then "
        "restart the Minds"
    ]


@contextmanager
def role_without_advisory_locks(database: str) -> Iterator[str]:
    """The URL of `database` as a new role that may not call pg_try_advisory_lock there."""
    role = f"tobe_t_{uuid.uuid4().hex[:12]}"
    execute(database, f"CREATE ROLE {role} LOGIN")
    try:
        execute(database, "REVOKE EXECUTE ON FUNCTION pg_try_advisory_lock(bigint) FROM PUBLIC")
        yield (
            sync_url(database)
            .set(drivername="postgresql", username=role)
            .render_as_string(hide_password=False)
        )
    finally:
        execute(database, f"DROP OWNED BY {role}", f"DROP ROLE {role}")


def test_a_role_that_cannot_take_advisory_locks_fails_naming_the_grant(tmp_path: Path) -> None:
    with (
        fresh_postgres_database(postgres_server_url()) as database,
        role_without_advisory_locks(database) as url,
    ):
        role = sync_url(url).username
        status, findings = doctor_on(tmp_path, url)
    assert status == 1
    assert findings["pg locks"] == [
        f"FAIL the role {role} cannot take advisory locks: permission denied for function "
        "pg_try_advisory_lock — fix: GRANT EXECUTE ON FUNCTION pg_try_advisory_lock(bigint), "
        f"pg_advisory_unlock(bigint), pg_advisory_xact_lock(bigint) TO {role} (PUBLIC holds "
        "them unless they were revoked)"
    ]
    assert findings["pg notify"] == ["ok a NOTIFY reached its LISTEN"]


def test_a_database_that_does_not_exist_is_named_with_the_statement_creating_it(
    tmp_path: Path,
) -> None:
    server = sync_url(postgres_server_url()).set(drivername="postgresql")
    url = server.set(database="tobe_t_absent").render_as_string(hide_password=False)
    status, findings = doctor_on(tmp_path, url)
    assert status == 1
    [line] = findings["store"]
    assert line.startswith("FAIL cannot open ")
    assert line.endswith(
        'FATAL:  database "tobe_t_absent" does not exist — fix: create it as a superuser '
        f"(CREATE DATABASE tobe_t_absent OWNER {server.username}), or correct the database "
        "name in database_url"
    )
    assert findings["postgresql"] == ["skip the server cannot be reached (see store)"]


def test_an_unreachable_server_is_one_store_line_with_its_fix_and_the_server_checks_skip(
    tmp_path: Path,
) -> None:
    url = f"postgresql://tobe@127.0.0.1:{free_port()}/tobe"
    status, findings = doctor_on(tmp_path, url)
    assert status == 1
    [line] = findings["store"]
    assert line.startswith(f"FAIL cannot open {url}: connection failed: ")
    assert line.endswith(
        "Connection refused — fix: start the server, or correct the host and port in "
        "database_url; the server must listen there (listen_addresses, port) and no firewall "
        "may drop the connection"
    )
    assert findings["postgresql"] == ["skip the server cannot be reached (see store)"]
    assert not any(check.startswith("pg ") for check in findings)


def test_a_wildcard_listen_address_without_an_advertise_address_fails_naming_the_setting(
    tmp_path: Path,
) -> None:
    """The cluster check reads only the settings: no server needs to answer."""
    url = f"postgresql://tobe@127.0.0.1:{free_port()}/tobe"
    port = free_port()
    fix = (
        " — fix: set [mind] advertise_address (TOBE_MIND__ADVERTISE_ADDRESS) to the host:port "
        "the other Minds reach this Mind at"
    )
    wildcard = {"TOBE_MIND__LISTEN": f"0.0.0.0:{port}", "TOBE_MIND__NODE_ID": "mind-a"}
    assert doctor_on(tmp_path, url, **wildcard)[1]["cluster"] == [
        f"FAIL [mind] listen '0.0.0.0:{port}' is a wildcard address, which names no host to "
        f"dial, and [mind] advertise_address is empty: the other Minds cannot reach this one{fix}"
    ]
    advertised = {**wildcard, "TOBE_MIND__ADVERTISE_ADDRESS": "mind-a.lan:7410"}
    assert doctor_on(tmp_path, url, **advertised)[1]["cluster"] == [
        "ok node mind-a, reached at mind-a.lan:7410 ([mind] advertise_address)"
    ]
    nowhere = {**wildcard, "TOBE_MIND__ADVERTISE_ADDRESS": "[::]:7410"}
    assert doctor_on(tmp_path, url, **nowhere)[1]["cluster"] == [
        "FAIL [mind] advertise_address '[::]:7410' is a wildcard address, which names no host "
        f"to dial{fix}"
    ]
    loopback = doctor_on(tmp_path, url, TOBE_MIND__LISTEN=f"127.0.0.1:{port}")[1]["cluster"]
    node_file = tmp_path / "data" / "node-id"
    assert loopback == [
        f"ok node id made at the Mind's first start (kept in {node_file}), reached at its "
        f"listen address 127.0.0.1:{port} (only Minds on this machine reach it)"
    ]


def test_on_sqlite_the_server_and_cluster_checks_are_one_skip_line_each(tmp_path: Path) -> None:
    env = doctor_env(tmp_path / "data", tmp_path / "none.toml", TOBE_DATABASE_URL="")
    findings = run_doctor(env)[1]
    assert findings["postgresql"] == ["skip the store is SQLite: no database server to check"]
    assert findings["cluster"] == [
        "skip the store is SQLite: one Mind, so [mind] node_id and advertise_address do not apply"
    ]
    assert not any(check.startswith("pg ") for check in findings)


def test_a_connection_leaving_the_machine_unencrypted_is_a_warning_naming_sslmode() -> None:
    finding = encryption_finding("10.0.0.5", None)
    assert (finding.status, finding.text) == (
        Status.WARN,
        "the connection to 10.0.0.5 is not encrypted: conversations and credentials cross the "
        "network readable by anyone on its path",
    )
    assert "sslmode=require" in finding.fix
    assert encryption_finding("10.0.0.5", "TLSv1.3").status is Status.OK
    assert encryption_finding(None, None).status is Status.OK
    assert encryption_finding("::1", None).status is Status.OK


def test_a_server_older_than_the_schema_needs_fails_saying_why() -> None:
    finding = version_finding(100023)
    assert (finding.status, finding.text, finding.fix) == (
        Status.FAIL,
        "PostgreSQL 10.23 is too old: the store's schema needs 11 or later (its triggers use "
        "EXECUTE FUNCTION)",
        "upgrade the server to PostgreSQL 11 or later",
    )
    assert version_finding(110000).status is Status.OK


def test_each_place_synchronous_commit_is_turned_off_gets_its_own_fix() -> None:
    assert commit_fix("user", "tobe", "app").startswith("`ALTER ROLE app RESET synchronous_commit`")
    assert commit_fix("database user", "tobe", "app").startswith(
        "`ALTER ROLE app IN DATABASE tobe RESET synchronous_commit`"
    )
    assert commit_fix("configuration file", "tobe", "app") == (
        "set synchronous_commit = on in postgresql.conf, then reload the server"
    )
    assert "PGOPTIONS" in commit_fix("client", "tobe", "app")


def test_a_refused_password_is_told_where_the_password_comes_from() -> None:
    reason = 'FATAL:  password authentication failed for user "tobe"'
    assert refusal_fix(reason, "postgresql://tobe@db.lan/tobe") == (
        "correct the password: in database_url (with @ : / % percent-encoded) or in PGPASSWORD"
    )
