"""The bearer-token interceptor on a real gRPC server: who gets in, who gets UNAUTHENTICATED."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mind.credentials import Identity, issue, parse_token, revoke, store_authenticator
from mind.credentials.interceptor import AuthInterceptor, current_identity
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.runtime.server import ServiceSpec, start_server
from tobe.v1 import (
    events_pb2,
    management_pb2,
    management_pb2_grpc,
    mind_pb2,
    mind_pb2_grpc,
)


class WhoAmI(management_pb2_grpc.ManagementServicer):
    """GetStatus answers with the caller's principal (in `mode`) and credential id."""

    async def GetStatus(self, request, context):
        identity = current_identity()
        return management_pb2.GetStatusResponse(
            mode=identity.principal, version=identity.credential_id
        )


class EchoIdentityStream(mind_pb2_grpc.MindServicer):
    """Subscribe streams two events whose audience is the caller's principal."""

    async def Subscribe(self, request, context):
        for durable_id in (1, 2):
            event = events_pb2.Event(durable_id=durable_id, audience=[current_identity().principal])
            yield mind_pb2.SubscribeResponse(event=event)


async def serve(authenticate) -> AsyncIterator[grpc.aio.Channel]:
    server = await start_server(
        [
            ServiceSpec(
                "tobe.v1.Management",
                lambda s: management_pb2_grpc.add_ManagementServicer_to_server(WhoAmI(), s),
            ),
            ServiceSpec(
                "tobe.v1.Mind",
                lambda s: mind_pb2_grpc.add_MindServicer_to_server(EchoIdentityStream(), s),
            ),
        ],
        ["127.0.0.1:0"],
        interceptors=[AuthInterceptor(authenticate)],
    )
    channel = open_channel(f"127.0.0.1:{server.bound['127.0.0.1:0']}")
    try:
        yield channel
    finally:
        await channel.close()
        await server.stop(grace=None)


@pytest.fixture
async def channel(database: Database) -> AsyncIterator[grpc.aio.Channel]:
    async for ch in serve(store_authenticator(database)):
        yield ch


@pytest.fixture
async def tokens(database: Database) -> dict[str, str]:
    def unit(tx: WriteTx) -> dict[str, str]:
        good, good_token = issue(tx.session, kind="client", principal="alice")
        revoked, revoked_token = issue(tx.session, kind="client", principal="bob")
        revoke(tx.session, revoked.id)
        return {"good": good_token, "good_id": good.id, "revoked": revoked_token}

    return await database.write(unit)


@pytest.fixture(autouse=True)
def all_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.DEBUG)
    names = ("grpc", "grpc._cython.cygrpc", "grpc.aio", "mind", "sqlalchemy")
    levels = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    yield caplog
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


async def status(channel: grpc.aio.Channel, metadata=()) -> management_pb2.GetStatusResponse:
    stub = management_pb2_grpc.ManagementStub(channel)
    return await stub.GetStatus(management_pb2.GetStatusRequest(), metadata=metadata, timeout=10)


async def refused(channel: grpc.aio.Channel, metadata, code=grpc.StatusCode.UNAUTHENTICATED) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await status(channel, metadata)
    assert caught.value.code() == code
    return caught.value.details() or ""


def assert_no_token_logged(tokens: dict[str, str], caplog, capfd) -> None:
    out, err = capfd.readouterr()
    logged = "\n".join(r.getMessage() for r in caplog.records) + caplog.text + out + err
    for name in ("good", "revoked"):
        secret = parse_token(tokens[name]).secret  # type: ignore[union-attr]
        assert tokens[name] not in logged and secret not in logged


async def test_good_token_reaches_the_servicer_with_its_identity(
    channel, tokens, all_logs, capfd
) -> None:
    reply = await status(channel, bearer_metadata(tokens["good"]))
    assert (reply.mode, reply.version) == ("alice", tokens["good_id"])
    assert_no_token_logged(tokens, all_logs, capfd)


async def test_streaming_call_sees_its_identity(channel, tokens, all_logs, capfd) -> None:
    stub = mind_pb2_grpc.MindStub(channel)
    stream = stub.Subscribe(mind_pb2.SubscribeRequest(), metadata=bearer_metadata(tokens["good"]))
    frames = [frame async for frame in stream]
    assert [(f.event.durable_id, list(f.event.audience)) for f in frames] == [
        (1, ["alice"]),
        (2, ["alice"]),
    ]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        _ = [frame async for frame in stub.Subscribe(mind_pb2.SubscribeRequest())]
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert_no_token_logged(tokens, all_logs, capfd)


async def test_missing_bad_and_revoked_credentials_are_unauthenticated(
    channel, tokens, all_logs, capfd
) -> None:
    assert "missing credentials" in await refused(channel, ())
    wrong_secret = tokens["good"][:-4] + "AAAA"
    for metadata in (
        bearer_metadata("tobe_0123456789abcdef_" + "a" * 43),
        bearer_metadata(wrong_secret),
        bearer_metadata("not-a-token"),
        bearer_metadata(tokens["revoked"]),
    ):
        details = await refused(channel, metadata)
        assert details == "invalid, revoked or expired credential"
    for metadata in (
        (("authorization", f"Basic {tokens['good']}"),),
        (("authorization", "Bearer"),),
        bearer_metadata(tokens["good"]) + bearer_metadata(tokens["good"]),
    ):
        assert "malformed authorization" in await refused(channel, metadata)
    assert_no_token_logged(tokens, all_logs, capfd)


async def test_health_check_needs_no_credentials(channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    reply = await health.Check(health_pb2.HealthCheckRequest(service="tobe.v1.Management"))
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_failing_authentication_backend_answers_unavailable(caplog, capfd) -> None:
    token = "tobe_0123456789abcdef_" + "b" * 43

    async def broken(presented: str) -> Identity | None:
        raise RuntimeError(f"database down while checking {presented}")

    async for channel in serve(broken):
        await refused(channel, bearer_metadata(token), grpc.StatusCode.UNAVAILABLE)
    out, err = capfd.readouterr()
    assert token not in caplog.text + out + err
    assert "authentication backend failed" in caplog.text


def test_current_identity_outside_a_call_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="no authenticated identity"):
        current_identity()


def test_no_token_in_any_output_with_grpc_tracing_on(tmp_path: Path) -> None:
    """A separate process, so gRPC core logging can be switched on before gRPC starts.

    The `http` tracer prints every header frame (masking `authorization` itself). gRPC's
    `api` tracer would dump raw metadata, token included: it is a gRPC debugging switch that
    must never be enabled in production, and is deliberately not enabled here.
    """
    env = {**os.environ, "GRPC_VERBOSITY": "debug", "GRPC_TRACE": "http,call_error"}
    result = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("auth_trace_probe.py")), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "outcomes: OK alice UNAUTHENTICATED UNAUTHENTICATED UNAUTHENTICATED" in result.stdout
    output = result.stdout + result.stderr
    assert "authorization" in output  # tracing really printed the call headers...
    for token in (tmp_path / "tokens").read_text().split():
        secret = parse_token(token).secret  # type: ignore[union-attr]
        assert token not in output and secret not in output  # ...but never a token
