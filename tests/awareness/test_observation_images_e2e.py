"""Observation images through real Awareness and Mind processes with the Scripted model: an
image an adapter observed reaches a vision model as an image and is stored with the note;
media that is not an image, or that Awareness will not give, stays a JSON description."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from awareness_harness import TOKEN, AwarenessProcess, Client
from awareness_images import png
from helpers.eventually import eventually_async
from helpers.mind_process import MindProcess, running_mind
from helpers.store_backend import connect as store_connect

from tobe.v1 import common_pb2, mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e

CONVERSATION = "p_awareness"
# Each run is picked by what the note's JSON says; its expectation fails the run (stop reason
# error) unless the note reaches the model with that many images.
SCRIPT = """
runs:
  - match: '"filename": "dot.png"'
    steps:
      - expect: {start_images: 1}
        text: "saw the picture"
  - match: '"mime_type": "application/pdf"'
    steps:
      - expect: {start_images: 0}
        text: "read the description"
  - match: '"filename": "large.png"'
    steps:
      - expect: {start_images: 0}
        text: "too large to see"
"""
VISION_MODEL = {"id": "eyes", "context_window": 100_000, "max_output": 256, "vision": True}
IMAGE = png(4, 2)
PDF = b"%PDF-1.4\n% a quarterly report\n" * 4
WAIT = 30.0


@pytest.fixture
def mind(awareness: AwarenessProcess, tmp_path: Path) -> Iterator[MindProcess]:
    """A Mind with a vision model, routing observations from `awareness`; it takes images up
    to a little more than IMAGE's size."""
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    env = {
        "TOBE_MIND__AWARENESS_ADDRESS": awareness.target,
        "TOBE_AWARENESS__TOKEN": TOKEN,
        "TOBE_MIND__AWARENESS_OWNER": "alice",
        "TOBE_MIND__MAX_IMAGE_BYTES": str(len(IMAGE) + 100),
        "TOBE_PROVIDER__MODEL": "eyes",
        "TOBE_PROVIDER__MODELS": json.dumps([VISION_MODEL]),
    }
    with running_mind(tmp_path, script=script, **env) as process:
        yield process


async def _emit(awareness: AwarenessProcess, filename: str, data: bytes) -> None:
    client = Client(awareness.target)
    try:
        probe = await client.adapter_id("probe")
        attachment = {"filename": filename, "data_base64": base64.b64encode(data).decode()}
        result = await client.interact(
            probe, "emit", trust="high", content={"event": "file seen"}, attachments=[attachment]
        )
        assert result["status"] == "success", result
    finally:
        await client.close()


def _answered_note(mind: MindProcess) -> dict | None:
    """The first note, once its run has ended: its text, images and the run's outcome."""
    with store_connect(mind.url) as db:
        note = db.execute(
            "SELECT m.id, m.text, m.payload, r.id, r.state, r.reason FROM messages m "
            "JOIN runs r ON r.id = m.run_id WHERE m.conversation_key = ? AND m.role = 'note' "
            "ORDER BY m.id LIMIT 1",
            (CONVERSATION,),
        ).fetchone()
        if note is None or note[4] == "running":
            return None
        answer = db.execute(
            "SELECT text FROM messages WHERE run_id = ? AND role = 'assistant' "
            "ORDER BY id DESC LIMIT 1",
            (note[3],),
        ).fetchone()
    return {
        "id": note[0],
        "text": note[1],
        "images": json.loads(note[2]).get("images", []),
        "state": note[4],
        "reason": note[5],
        "answer": answer[0] if answer else "",
    }


async def _note(mind: MindProcess) -> dict:
    return await eventually_async(
        lambda: _answered_note(mind),
        WAIT,
        what="the observation note's run to end",
        interval=0.1,
        context=lambda: "the Mind logged:\n" + "\n".join(mind.output[-40:]),
    )


def _media_rows(mind: MindProcess) -> list[tuple[str, str, int]]:
    with store_connect(mind.url) as db:
        return db.execute("SELECT digest, media_type, size_bytes FROM media").fetchall()


def _history_note(mind: MindProcess) -> common_pb2.Message:
    with grpc.insecure_channel(mind.address) as channel:
        reply = mind_pb2_grpc.MindStub(channel).GetHistory(
            mind_pb2.GetHistoryRequest(
                on_behalf_of=mind_pb2.OnBehalfOf(principal="alice", scopes=["chat"]),
                conversation_key=CONVERSATION,
            ),
            metadata=mind.gateway_metadata,
        )
    [note] = [m for m in reply.messages if m.role == common_pb2.MESSAGE_ROLE_NOTE]
    return note


async def test_an_observed_image_reaches_a_vision_model_and_is_stored_with_the_note(
    awareness: AwarenessProcess, mind: MindProcess
):
    await _emit(awareness, "dot.png", IMAGE)
    note = await _note(mind)
    assert (note["state"], note["answer"]) == ("completed", "saw the picture"), note["reason"]
    digest = hashlib.sha256(IMAGE).hexdigest()
    assert _media_rows(mind) == [(digest, "image/png", len(IMAGE))]
    # The description stays in the note beside the image.
    assert f'"ref": "media:{digest}"' in note["text"]
    assert [list(ref.values()) for ref in note["images"]] == [[digest, "image/png", len(IMAGE)]]
    assert list(_history_note(mind).images) == [
        common_pb2.ImageRef(digest=digest, media_type="image/png", size_bytes=len(IMAGE))
    ]


async def test_observed_media_that_is_not_an_image_reaches_the_model_as_its_description(
    awareness: AwarenessProcess, mind: MindProcess
):
    await _emit(awareness, "report.pdf", PDF)
    note = await _note(mind)
    outcome = (note["state"], note["answer"])
    assert outcome == ("completed", "read the description"), note["reason"]
    ref = "media:" + hashlib.sha256(PDF).hexdigest()
    assert f'"ref": "{ref}"' in note["text"] and note["images"] == []
    assert _media_rows(mind) == []
    assert list(_history_note(mind).images) == []


async def test_an_image_awareness_will_not_give_leaves_the_note_without_it_and_logs_why(
    awareness: AwarenessProcess, mind: MindProcess
):
    # A PNG still, by its bytes; past what the Mind reads to bring within mind.max_image_bytes.
    large = IMAGE + b"padding " * 200
    await _emit(awareness, "large.png", large)
    note = await _note(mind)
    assert (note["state"], note["answer"]) == ("completed", "too large to see"), note["reason"]
    ref = "media:" + hashlib.sha256(large).hexdigest()
    assert f'"ref": "{ref}"' in note["text"] and note["images"] == []
    assert _media_rows(mind) == []
    [line] = [line for line in mind.output if ref in line]
    assert "FAILED_PRECONDITION" in line
