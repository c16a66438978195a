"""One connection's event cursor: audience filtering, no gaps or overlaps, resync on overflow."""

from __future__ import annotations

from face.connection import Connection, Identity, Phase, RenderedEvent
from face.projection import SUMMARY, AdmissionModes
from face.queue import Closing, Outbound
from face.servicer import seq_prefix
from tobe.v1 import common_pb2, events_pb2, face_pb2

ALICE = Identity("alice", ("chat",), "cred-a")
ADMIN = Identity("root", ("chat", "admin"), "cred-r")
MODES = AdmissionModes()


def message(durable_id: int, audience: tuple[str, ...] = ("alice",)) -> RenderedEvent:
    event = events_pb2.Event(
        durable_id=durable_id,
        conversation_key="p_a",
        audience=audience,
        message_appended=common_pb2.Message(id=durable_id, text=f"m{durable_id}"),
    )
    return RenderedEvent(event, MODES)


def delta(text: str) -> RenderedEvent:
    event = events_pb2.Event(
        conversation_key="p_a", audience=["alice"], text_delta=events_pb2.TextDelta(text=text)
    )
    return RenderedEvent(event, MODES)


async def frames(connection: Connection) -> list[face_pb2.ConnectResponse]:
    result = []
    while len(connection.queue):
        item = await connection.queue.get()
        assert isinstance(item, Outbound)
        result.append(face_pb2.ConnectResponse.FromString(item.body))
    return result


def live(identity: Identity = ALICE, capacity: int = 64) -> Connection:
    connection = Connection(identity, SUMMARY, capacity)
    connection.phase = Phase.LIVE
    return connection


async def test_only_events_of_the_principals_audience_are_delivered() -> None:
    connection = live()
    connection.on_live_event(message(1, ("bob",)))
    connection.on_live_event(message(2, ("alice", "bob")))
    connection.on_live_event(RenderedEvent(events_pb2.Event(durable_id=3), MODES))
    assert [f.event.durable_id for f in await frames(connection)] == [2]


async def test_admin_scope_sees_every_conversation() -> None:
    connection = live(ADMIN)
    connection.on_live_event(message(1, ("bob",)))
    assert [f.event.durable_id for f in await frames(connection)] == [1]


async def test_a_durable_event_is_delivered_once_even_when_seen_twice() -> None:
    connection = live()
    for durable_id in (1, 2, 2, 1, 3):
        connection.on_live_event(message(durable_id))
    assert [f.event.durable_id for f in await frames(connection)] == [1, 2, 3]


async def test_replay_then_parked_live_events_join_without_gap_or_overlap() -> None:
    connection = Connection(ALICE, SUMMARY, 64)
    connection.begin_catch_up(after_id=0, feed_position=3)
    # Live events arrive while the replay runs: parked, ephemeral ones dropped.
    connection.on_live_event(message(3))
    connection.on_live_event(delta("x"))
    connection.on_live_event(message(4))
    for durable_id in (1, 2, 3):
        await connection.replay(message(durable_id))
    assert connection.caught_up(replay_done=True)
    await connection.finish_replay(3)
    connection.on_live_event(message(5))
    received = await frames(connection)
    kinds = [f.WhichOneof("frame") for f in received]
    assert kinds == ["event", "event", "event", "replay_done", "event", "event"]
    assert [f.event.durable_id for f in received if f.HasField("event")] == [1, 2, 3, 4, 5]
    assert received[3].replay_done.last_durable_id == 3


async def test_a_replay_behind_the_feed_is_not_caught_up() -> None:
    connection = Connection(ALICE, SUMMARY, 64)
    connection.begin_catch_up(after_id=0, feed_position=7)
    await connection.replay(message(5))
    assert not connection.caught_up(replay_done=True)


async def test_overflow_closes_with_a_resync_naming_the_last_written_id() -> None:
    connection = live(capacity=8)
    connection.written_durable_id = 2
    for durable_id in range(1, 20):
        connection.on_live_event(message(durable_id))
    closing = await connection.queue.get()
    assert closing == Closing("RESOURCE_EXHAUSTED", "resync required", resync=True)
    assert connection.resync_frame().resync.after_id == 2


async def test_parking_is_bounded_too() -> None:
    connection = Connection(ALICE, SUMMARY, 8)
    connection.begin_catch_up(after_id=0, feed_position=0)
    for durable_id in range(1, 20):
        connection.on_live_event(message(durable_id))
    assert isinstance(await connection.queue.get(), Closing)


def test_sequence_prefix_is_the_seq_field_of_the_frame() -> None:
    body = face_pb2.ConnectResponse(event=events_pb2.Event(durable_id=5)).SerializeToString()
    for seq in (1, 127, 128, 300, 2**40):
        frame = face_pb2.ConnectResponse.FromString(seq_prefix(seq) + body)
        assert frame.seq == seq and frame.event.durable_id == 5


async def test_a_revocation_closes_its_connections_and_is_remembered_for_late_joiners() -> None:
    from face.feed import EventFeed

    feed = EventFeed(mind=None, modes=AdmissionModes())  # type: ignore[arg-type]
    revoked, other = live(ALICE), live(ADMIN)
    feed.connections.update({revoked, other})
    feed.dispatch(
        events_pb2.Event(
            durable_id=7,
            credential_revoked=events_pb2.CredentialRevoked(credential_id="cred-a"),
        )
    )
    assert revoked.queue.closing is not None and revoked.queue.closing.code == "UNAUTHENTICATED"
    assert other.queue.closing is None
    # A connection of that credential that authenticated before the event is refused later.
    assert "cred-a" in feed.revoked and "cred-r" not in feed.revoked
