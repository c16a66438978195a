"""A forwarded chat record sent to a real Mind reaches each wire with every item's images right
after that item's text, in each wire's own image format (see test_image_wires_e2e.py for the
documented formats): the request body a local server received."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.mind_gateway import Gateway
from helpers.mind_process import running_mind
from provider_wire import Reply, WireServer, data_file

from tobe.v1 import common_pb2, mind_pb2

pytestmark = pytest.mark.e2e

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
GIF = b"GIF89a" + bytes(range(64))
ANSWERS = {
    "openai": "openai/e2e_answer.sse",
    "anthropic": "anthropic/basic_response.txt",
    "gemini": "gemini/max_tokens.sse",
}


def _text(kind: str, text: str) -> dict[str, Any]:
    return {"text": text} if kind == "gemini" else {"type": "text", "text": text}


def _image(kind: str, media_type: str, data: bytes) -> dict[str, Any]:
    encoded = base64.b64encode(data).decode()
    if kind == "openai":
        return {"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{encoded}"}}
    if kind == "anthropic":
        source = {"type": "base64", "media_type": media_type, "data": encoded}
        return {"type": "image", "source": source}
    return {"inlineData": {"mimeType": media_type, "data": encoded}}


@pytest.mark.parametrize("kind", sorted(ANSWERS))
def test_each_forwarded_items_images_follow_its_text_on_every_wire(
    tmp_path: Path, wire: WireServer, kind: str
) -> None:
    model = {"id": "pictures", "context_window": 100_000, "max_output": 256, "vision": True}
    env = {
        "TOBE_PROVIDER__KIND": kind,
        "TOBE_PROVIDER__MODEL": "pictures",
        "TOBE_PROVIDER__MODELS": json.dumps([model]),
        "TOBE_PROVIDER__BASE_URL": wire.url,
        "TOBE_PROVIDER__API_KEY": "test-key",
        "TOBE_PROVIDER__MAX_RETRIES": "0",
    }
    record = [
        common_pb2.ForwardedItemUpload(
            speaker="bob",
            text="first picture",
            images=[common_pb2.ImageUpload(media_type="image/png", data=PNG)],
        ),
        common_pb2.ForwardedItemUpload(speaker="carol", text="no picture"),
        common_pb2.ForwardedItemUpload(
            speaker="bob",
            text="second picture",
            images=[common_pb2.ImageUpload(media_type="image/gif", data=GIF)],
        ),
    ]
    wire.play(Reply(body=data_file(ANSWERS[kind])))
    with running_mind(tmp_path, script=None, **env) as mind:
        gateway = Gateway.connect(mind)
        try:
            key = gateway.create(f"p_{uuid.uuid4().hex[:12]}")
            start = gateway.head()
            sent = gateway.stub.SendChat(
                mind_pb2.SendChatRequest(
                    on_behalf_of=gateway.who("alice"),
                    conversation_key=key,
                    text="what do you make of it?",
                    idempotency_key="forwarded",
                    forwarded=record,
                ),
                metadata=gateway.md,
                timeout=15,
            )
            gateway.wait_runs_ended(start, {sent.run_id})
        finally:
            gateway.close()

    body = wire.requests[0].json()
    turns = body["contents"] if kind == "gemini" else body["messages"]
    [turn] = [t for t in turns if "forwarded chat record" in json.dumps(t)]
    parts = turn.get("parts") or turn["content"]
    stamp = parts[0]["text"].split(" GMT] ")[0] + " GMT] "
    assert parts == [
        _text(kind, f"{stamp}what do you make of it?\n[forwarded chat record]"),
        _text(kind, "bob: first picture\n[forwarded image 1]"),
        _image(kind, "image/png", PNG),
        _text(kind, "carol: no picture\nbob: second picture\n[forwarded image 2]"),
        _image(kind, "image/gif", GIF),
    ]
