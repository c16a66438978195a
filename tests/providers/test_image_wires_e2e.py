"""An image sent to a real Mind reaches each wire in that wire's own format (a vision model) or
as the placeholder text (a blind one): the request body a local server received, exactly.

The formats, as each provider documents its request:
* OpenAI Chat Completions: a user message whose `content` is an array of parts, the text part
  then `{"type": "image_url", "image_url": {"url": "data:<type>;base64,<data>"}}`
  (https://platform.openai.com/docs/guides/images-vision, "Passing a Base64 encoded image";
  the vLLM OpenAI-compatible server takes the same shape:
  https://docs.vllm.ai/en/v0.5.5/getting_started/examples/openai_vision_api_client.html).
* Anthropic Messages: `{"type": "image", "source": {"type": "base64", "media_type": ...,
  "data": ...}}` content blocks, media types image/jpeg, png, gif, webp
  (https://docs.anthropic.com/en/docs/build-with-claude/vision, "Base64-encoded image").
* Gemini generateContent (REST, camelCase): a part `{"inlineData": {"mimeType": ...,
  "data": ...}}` next to the text part (https://ai.google.dev/gemini-api/docs/image-understanding,
  "Passing inline image data"; https://ai.google.dev/api/caching#Blob).
"""

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

from mind.providers.vision import IMAGE_UNSUPPORTED
from tobe.v1 import common_pb2, mind_pb2

pytestmark = pytest.mark.e2e

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
DATA = base64.b64encode(PNG).decode()
ANSWERS = {
    "openai": "openai/e2e_answer.sse",
    "anthropic": "anthropic/basic_response.txt",
    "gemini": "gemini/max_tokens.sse",
}


def _user_turns(kind: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The wire's user messages that carry the person's words (not the current-time note)."""
    turns = body["contents"] if kind == "gemini" else body["messages"]
    return [turn for turn in turns if turn["role"] == "user" and "[image #" in json.dumps(turn)]


def _expected(kind: str, text: str, vision: bool) -> dict[str, Any]:
    if not vision:
        blind = f"{text}\n{IMAGE_UNSUPPORTED}"
        if kind == "openai":
            return {"role": "user", "content": blind}
        if kind == "anthropic":
            return {"role": "user", "content": [{"type": "text", "text": blind}]}
        return {"role": "user", "parts": [{"text": blind}]}
    if kind == "openai":
        image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{DATA}"}}
        return {"role": "user", "content": [{"type": "text", "text": text}, image]}
    if kind == "anthropic":
        source = {"type": "base64", "media_type": "image/png", "data": DATA}
        return {
            "role": "user",
            "content": [{"type": "text", "text": text}, {"type": "image", "source": source}],
        }
    return {
        "role": "user",
        "parts": [{"text": text}, {"inlineData": {"mimeType": "image/png", "data": DATA}}],
    }


@pytest.mark.parametrize("vision", [True, False], ids=["vision", "blind"])
@pytest.mark.parametrize("kind", sorted(ANSWERS))
def test_an_image_reaches_each_wire_in_its_own_format_or_as_the_placeholder(
    tmp_path: Path, wire: WireServer, kind: str, vision: bool
) -> None:
    model = {"id": "pictures", "context_window": 100_000, "max_output": 256, "vision": vision}
    env = {
        "TOBE_PROVIDER__KIND": kind,
        "TOBE_PROVIDER__MODEL": "pictures",
        "TOBE_PROVIDER__MODELS": json.dumps([model]),
        "TOBE_PROVIDER__BASE_URL": wire.url,
        "TOBE_PROVIDER__API_KEY": "test-key",
        "TOBE_PROVIDER__MAX_RETRIES": "0",
    }
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
                    text="what is this?",
                    idempotency_key="with-image",
                    detail_mode=common_pb2.DETAIL_MODE_TRANSPARENT,
                    images=[common_pb2.ImageUpload(media_type="image/png", data=PNG)],
                ),
                metadata=gateway.md,
                timeout=15,
            )
            gateway.wait_runs_ended(start, {sent.run_id})
        finally:
            gateway.close()

    [turn] = _user_turns(kind, wire.requests[0].json())
    parts = turn.get("parts") or turn["content"]
    text = parts if isinstance(parts, str) else parts[0]["text"]
    stamp, _, said = text.partition(" GMT] ")
    assert stamp.startswith("[") and said.startswith(f"[image #{sent.message_id}] what is this?")
    assert turn == _expected(kind, f"{stamp} GMT] [image #{sent.message_id}] what is this?", vision)
