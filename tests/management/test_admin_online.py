"""The Management service as the running Mind serves it: owner-only socket, no TCP, no leaks."""

from __future__ import annotations

import sqlite3
import stat

import grpc
import pytest
from admin_store import audit_inserts_fail
from helpers.admin_cli import Admin
from helpers.face_process import FaceProcess
from helpers.mind_process import MindProcess

from tobe.v1 import management_pb2, management_pb2_grpc

pytestmark = pytest.mark.e2e


@pytest.fixture
def mind(stack: tuple[MindProcess, FaceProcess]) -> MindProcess:
    return stack[0]


def test_socket_is_owner_only(mind: MindProcess) -> None:
    socket_file = mind.data_dir / "mind.sock"
    mode = socket_file.stat().st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


def test_management_is_not_served_on_the_tcp_port(mind: MindProcess) -> None:
    with grpc.insecure_channel(mind.address) as channel:
        stub = management_pb2_grpc.ManagementStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.GetStatus(management_pb2.GetStatusRequest(), timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_status_shows_the_running_minds_services(mind: MindProcess) -> None:
    admin = Admin(mind.data_dir)
    result = admin.run("--verbose", "status")
    assert "mode: online" in result.stderr
    status = admin.json("status")
    assert status["mode"] == "online"
    services = {s["name"]: s for s in status["services"]}
    assert services["mind"]["address"] == mind.address
    assert services["management"]["address"] == f"unix:{mind.data_dir / 'mind.sock'}"
    assert status["schema_revision"] and status["database_size_bytes"] > 0


def test_no_secret_reaches_the_minds_log(mind: MindProcess) -> None:
    admin = Admin(mind.data_dir)
    created = admin.json("credentials", "create", "--kind", "client", "--principal", "logcheck")
    rotated = admin.json("credentials", "rotate", created["credential"]["id"])
    admin.run("credentials", "revoke", rotated["credential"]["id"])
    admin.run("credentials", "revoke", rotated["credential"]["id"], ok=False)
    log = "\n".join(mind.output)
    for secret in (created["secret"], rotated["secret"]):
        assert secret.split("_", 2)[2] not in log


@pytest.mark.sqlite_store(reason="injects the audit failure with a SQLite trigger")
def test_failed_audit_leaves_nothing_online_either(mind: MindProcess) -> None:
    admin = Admin(mind.data_dir)
    with audit_inserts_fail(admin.data_dir):
        admin.run("credentials", "create", "--kind", "client", "--principal", "atomic", ok=False)
    assert admin.json("credentials", "list", "--all", "--principal", "atomic") == []
    with sqlite3.connect(mind.data_dir / "tobe.db") as db:
        found = db.execute("SELECT count(*) FROM credentials WHERE principal = 'atomic'")
        assert found.fetchone() == (0,)
