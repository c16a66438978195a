"""Images on a Hand's task result, over real HandLink: checked like a person's, stored once with
the result, refused INVALID with the task unchanged when they break the rules."""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from helpers.eventually import eventually_async
from remote_harness import CONVERSATION, Link, tool_context
from sqlalchemy import func, select

from hand import Hand, ToolOutput
from mind.remote.model import ImageLimits, NewTask, TaskState
from mind.remote.notes import BackgroundNotes
from mind.store.models import Media, Message
from mind.tools.base import DetailMode
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.v1 import common_pb2, hand_pb2, hand_pb2_grpc

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))


def png(size: int = len(PNG)) -> common_pb2.ImageUpload:
    return common_pb2.ImageUpload(media_type="image/png", data=PNG.ljust(size, b"\0"))


async def media_rows(link: Link) -> int:
    return int(
        await link.database.read(
            lambda session: session.scalar(select(func.count()).select_from(Media))
        )
    )


async def test_a_results_image_is_stored_once_and_its_reference_is_the_outcomes(
    link: Link, serve
) -> None:
    hand = Hand("laptop")

    @hand.tool
    def shot() -> ToolOutput:
        """A screenshot."""
        return ToolOutput("the screen", images=[("image/png", PNG)])

    await serve(hand, link.target, link.token)
    tool = link.tool("laptop__shot")
    first = await tool.run({}, tool_context(call_id="call_1"))
    second = await tool.run({}, tool_context(call_id="call_2"))
    ref = {"digest": hashlib.sha256(PNG).hexdigest(), "media_type": "image/png", "size_bytes": 48}
    assert first.ok and first.output == "the screen" and first.images == (ref,)
    assert second.images == (ref,)
    assert await media_rows(link) == 1


REFUSED = {
    "too-many": (True, [png(), png(), png()], "the result carries 3 images; the maximum is 2"),
    "too-large": (True, [png(65)], "image 0 is 65 bytes; the maximum is 64 bytes"),
    "not-an-image": (
        True,
        [common_pb2.ImageUpload(media_type="image/png", data=b"GIF-ish text")],
        "image 0 is not a PNG, JPEG, WebP or GIF image",
    ),
    "on-a-failed-result": (False, [png()], "a failed result cannot carry images"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
async def test_result_images_breaking_the_rules_are_refused_invalid_and_change_nothing(
    link: Link, case: str
) -> None:
    ok, images, message = REFUSED[case]
    link.remote.authority.image_limits = ImageLimits(max_bytes=64, max_count=2)
    async with open_channel(link.target) as channel:
        call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(link.token))
        tool = hand_pb2.ToolSpec(name="shot", description="shot", parameters_json_schema="{}")
        await call.write(hand_pb2.AttachRequest(hello=hand_pb2.HandHello(tools=[tool])))
        assert (await call.read()).WhichOneof("frame") == "welcome"
        spec = NewTask(CONVERSATION, "run_1", "call_1", "laptop", "shot", {}, DetailMode.SUMMARY)
        task_id = (await link.remote.authority.offer(spec)).task_id
        assert (await call.read()).WhichOneof("frame") == "offer"
        reports = [
            hand_pb2.AttachRequest(accepted=hand_pb2.TaskAccepted(task_id=task_id, attempt=1)),
            hand_pb2.AttachRequest(
                result=hand_pb2.TaskResult(
                    task_id=task_id,
                    attempt=1,
                    ok=ok,
                    output="x",
                    error="" if ok else "x",
                    images=images,
                )
            ),
        ]
        acks = []
        for report in reports:
            await call.write(report)
            while True:
                frame = await asyncio.wait_for(call.read(), 10)
                if frame.WhichOneof("frame") == "ack":
                    acks.append(frame.ack)
                    break
        task = await link.remote.registry.get(task_id)
        assert await media_rows(link) == 0
        # Sent again without them, the result is taken.
        await call.write(
            hand_pb2.AttachRequest(
                result=hand_pb2.TaskResult(task_id=task_id, attempt=1, ok=True, output="x")
            )
        )
        while (frame := await asyncio.wait_for(call.read(), 10)).WhichOneof("frame") != "ack":
            pass
        call.cancel()
    refused = acks[1]
    assert refused.status == hand_pb2.ACK_STATUS_INVALID and message in refused.message
    assert task is not None and task.state is TaskState.ACCEPTED and task.images == ()
    assert frame.ack.status == hand_pb2.ACK_STATUS_OK


async def test_the_sdk_sends_a_result_again_without_the_images_the_mind_refused(
    link: Link, serve
) -> None:
    link.remote.authority.image_limits = ImageLimits(max_bytes=1024, max_count=1)
    hand = Hand("laptop")

    @hand.tool
    def shots() -> ToolOutput:
        """Two screenshots."""
        return ToolOutput("the screens", images=[("image/png", PNG), ("image/png", PNG)])

    await serve(hand, link.target, link.token)
    outcome = await link.tool("laptop__shots").run({}, tool_context())
    assert outcome.ok and outcome.images == ()
    assert outcome.output.startswith("the screens\n[2 images left out: the result carries 2")
    assert await media_rows(link) == 0


async def test_a_background_results_images_come_with_its_note(link: Link, serve) -> None:
    hand = Hand("laptop")

    @hand.tool(background=True)
    def render() -> ToolOutput:
        """Render a chart in the background."""
        return ToolOutput("rendered", images=[("image/png", PNG)])

    await serve(hand, link.target, link.token)
    started = await link.tool("laptop__render").run({}, tool_context())
    assert started.ok and started.images == ()
    await eventually_async(lambda: bool(link.sink), 10, what="the background result")
    [record] = link.sink
    await BackgroundNotes(link.database).deliver(record)
    notes = await link.database.read(
        lambda session: session.scalars(select(Message).where(Message.role == "note")).all()
    )
    assert [note.payload["images"] for note in notes] == [list(record.images)]
    assert record.images[0]["digest"] == hashlib.sha256(PNG).hexdigest()
