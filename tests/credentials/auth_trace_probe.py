"""Run by test_auth_interceptor: authenticated and refused calls with every log turned up.

`python auth_trace_probe.py <dir>`: creates a SQLite store in <dir>, issues a good and a
revoked token (written to <dir>/tokens, never printed), serves GetStatus behind the
interceptor and calls it with good, revoked, wrong and missing credentials. Python logging goes
to stderr at DEBUG without redaction; gRPC core tracing is enabled through the environment by
the caller. The caller scans the output for the tokens.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import grpc

from mind.credentials import issue, revoke, store_authenticator
from mind.credentials.interceptor import AuthInterceptor, current_identity
from mind.store.database import Database
from mind.store.migrate import upgrade
from mind.store.write_tx import WriteTx
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.runtime.server import ServiceSpec, start_server
from tobe.v1 import management_pb2, management_pb2_grpc


class WhoAmI(management_pb2_grpc.ManagementServicer):
    async def GetStatus(self, request, context):
        return management_pb2.GetStatusResponse(mode=current_identity().principal)


async def main(directory: Path) -> None:
    url = f"sqlite:///{directory / 'tobe.db'}"
    upgrade(url)
    database = Database.open(url)

    def issue_tokens(tx: WriteTx) -> tuple[str, str]:
        _, good = issue(tx.session, kind="client", principal="alice")
        bad, revoked = issue(tx.session, kind="client", principal="bob")
        revoke(tx.session, bad.id)
        return good, revoked

    good, revoked = await database.write(issue_tokens)
    (directory / "tokens").write_text(f"{good}\n{revoked}\n")

    server = await start_server(
        [
            ServiceSpec(
                "tobe.v1.Management",
                lambda s: management_pb2_grpc.add_ManagementServicer_to_server(WhoAmI(), s),
            )
        ],
        ["127.0.0.1:0"],
        interceptors=[AuthInterceptor(store_authenticator(database))],
    )
    channel = open_channel(f"127.0.0.1:{server.bound['127.0.0.1:0']}")
    stub = management_pb2_grpc.ManagementStub(channel)
    outcomes = []
    for metadata in (
        bearer_metadata(good),
        bearer_metadata(revoked),
        bearer_metadata(good[:-4] + "AAAA"),
        (),
    ):
        try:
            reply = await stub.GetStatus(management_pb2.GetStatusRequest(), metadata=metadata)
            outcomes.append(f"OK {reply.mode}")
        except grpc.aio.AioRpcError as exc:
            outcomes.append(exc.code().name)
    await channel.close()
    await server.stop(grace=None)
    await database.close()
    print("outcomes:", " ".join(outcomes), flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    asyncio.run(main(Path(sys.argv[1])))
