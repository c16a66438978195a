"""The two Management reads the checks make, online or offline (`management.connection`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from management.connection import Connection, connect
from mind.management import ACTOR_METADATA
from tobe.config import Settings
from tobe.v1 import management_pb2 as pb

if TYPE_CHECKING:
    from tobe.v1.management_pb2_grpc import ManagementAsyncStub

ACTOR = "tobe doctor"
CALL_TIMEOUT = 10.0
CONNECT_WAIT = 2.0
_METADATA = ((ACTOR_METADATA, ACTOR),)


def _stub(connection: Connection) -> ManagementAsyncStub:
    # Made on an asyncio channel, the stub is the async one its stubs file declares.
    return cast("ManagementAsyncStub", connection.stub)


async def list_credentials(settings: Settings) -> tuple[str, pb.ListCredentialsResponse]:
    """Every credential, revoked ones included, and the mode ("online"/"offline") that answered."""
    async with connect(settings, wait=CONNECT_WAIT) as connection:
        request = pb.ListCredentialsRequest(include_revoked=True)
        response = await _stub(connection).ListCredentials(
            request, metadata=_METADATA, timeout=CALL_TIMEOUT
        )
        return connection.mode, response


async def status(settings: Settings) -> pb.GetStatusResponse:
    async with connect(settings, wait=CONNECT_WAIT) as connection:
        return await _stub(connection).GetStatus(
            pb.GetStatusRequest(), metadata=_METADATA, timeout=CALL_TIMEOUT
        )
