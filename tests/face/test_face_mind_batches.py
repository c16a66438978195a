"""The Face's subscription reads the Mind's responses with one event each (a Mind that does not
batch) and with several (`more`), handing on every event once, in order."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from face.errors import MindCallError
from face.mind_client import MindClient
from tobe.v1 import events_pb2, mind_pb2, mind_pb2_grpc


def _event(durable_id: int) -> events_pb2.Event:
    # Durable id 0 is an ephemeral event (a text delta).
    return events_pb2.Event(durable_id=durable_id, conversation_key="p_x", audience=["alice"])


# What the Mind streams: each inner list one response, ReplayDone as None.
BATCHED = [[_event(1), _event(2)], None, [_event(3)], [_event(0), _event(4), _event(5)]]
SINGLE = [[_event(1)], [_event(2)], None, [_event(3)], [_event(0)], [_event(4)], [_event(5)]]


class _Mind(mind_pb2_grpc.MindServicer):
    def __init__(self, responses: list[list[events_pb2.Event] | None]) -> None:
        self.responses = responses
        self.requests: list[mind_pb2.SubscribeRequest] = []

    async def Subscribe(  # type: ignore[override]
        self, request: mind_pb2.SubscribeRequest, context: object
    ) -> AsyncIterator[mind_pb2.SubscribeResponse]:
        self.requests.append(request)
        for events in self.responses:
            if events is None:
                yield mind_pb2.SubscribeResponse(replay_done=mind_pb2.ReplayDone(last_durable_id=2))
            else:
                yield mind_pb2.SubscribeResponse(event=events[0], more=events[1:])


@pytest.mark.parametrize("responses", [BATCHED, SINGLE], ids=["batched", "one_per_response"])
async def test_the_feed_hands_on_every_event_of_each_response_in_order(
    responses: list[list[events_pb2.Event] | None],
):
    mind = _Mind(responses)
    server = grpc.aio.server()
    mind_pb2_grpc.add_MindServicer_to_server(mind, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    client = MindClient(f"127.0.0.1:{port}", "tobe_face_token")
    seen: list[object] = []
    try:
        with pytest.raises(MindCallError, match="ended the event stream"):
            async for item in client.subscribe(0, include_ephemeral=True):
                seen.append(item.durable_id if isinstance(item, events_pb2.Event) else "done")
    finally:
        await client.close()
        await server.stop(None)

    assert seen == [1, 2, "done", 3, 0, 4, 5]
    assert [request.batches for request in mind.requests] == [True]
