"""A Hand's screenshot, end to end: a real Mind (each wire's adapter, a vision model) calls a tool
of a real SDK Hand that returns an image; the image is stored once, the tool message shows its
reference, and the next request the local provider server receives carries it in the wire's
own shape for a tool result's images:

* Anthropic Messages: the `tool_result` block's `content` is a list, the text block then an
  `image` block (https://docs.anthropic.com/en/docs/build-with-claude/vision, and the tool use
  guide: "tool_result ... content ... can also be a list of nested content blocks ... image").
* Gemini generateContent: the `functionResponse` part, then an `inlineData` part in the same
  user turn (https://ai.google.dev/api/caching#Blob).
* OpenAI Chat Completions: `tool` messages carry text only, so the tool message is followed by
  one user message `[images from tool call <id>]` plus an `image_url` part with a data URL.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.eventually import eventually
from helpers.mind_gateway import Gateway
from helpers.mind_process import MindProcess, issue_token, running_mind
from provider_wire import Reply, WireServer, data_file
from sqlalchemy import create_engine, func, select

from hand import Hand, ToolOutput
from mind.store.engine import sync_url
from mind.store.models import Media
from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))
DATA = base64.b64encode(PNG).decode()
# Per wire: the recorded call of `current_time` and an answer after it.
TURNS = {
    "openai": ("openai/e2e_tool_call.sse", "openai/e2e_answer.sse"),
    "anthropic": ("anthropic/e2e_thinking_tool_use.txt", "anthropic/basic_response.txt"),
    "gemini": ("gemini/e2e_function_call.sse", "gemini/max_tokens.sse"),
}


def screenshot_hand() -> Hand:
    hand = Hand("laptop")

    @hand.tool
    def current_time(timezone: str) -> ToolOutput:
        """The time, and a picture of the clock."""
        return ToolOutput(json.dumps({"timezone": timezone}), images=[("image/png", PNG)])

    return hand


class HandThread:
    """An SDK Hand serving on its own event loop until the test ends."""

    def __init__(self, hand: Hand, target: str, token: str) -> None:
        self.hand = hand
        self._loop = asyncio.new_event_loop()
        self._job: asyncio.Future[None] | None = None
        self._thread = threading.Thread(target=self._run, args=(target, token), daemon=True)

    def _run(self, target: str, token: str) -> None:
        asyncio.set_event_loop(self._loop)
        self._job = self._loop.create_task(self.hand.serve(target, token))
        try:
            self._loop.run_until_complete(self._job)
        except (asyncio.CancelledError, Exception):
            pass

    def __enter__(self) -> HandThread:
        self._thread.start()
        eventually(lambda: self.hand.attached.is_set(), 15, what="the Hand to attach")
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._job is not None:
            self._loop.call_soon_threadsafe(self._job.cancel)
        self._thread.join(10)


def _media_rows(mind: MindProcess) -> int:
    engine = create_engine(sync_url(mind.url))
    try:
        with engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(Media)).scalar_one())
    finally:
        engine.dispose()


def _result_images(kind: str, body: dict[str, Any]) -> Any:
    """What the second request says about the tool result's images, in the wire's shape."""
    if kind == "anthropic":
        [result] = [
            block
            for turn in body["messages"]
            if isinstance(turn["content"], list)
            for block in turn["content"]
            if block.get("type") == "tool_result"
        ]
        return result["content"]
    if kind == "gemini":
        [turn] = [t for t in body["contents"] if any("functionResponse" in p for p in t["parts"])]
        return turn["parts"]
    turns = body["messages"]
    [at] = [i for i, turn in enumerate(turns) if turn["role"] == "tool"]
    return turns[at : at + 2]


@pytest.mark.parametrize("kind", sorted(TURNS))
def test_a_hands_image_is_stored_once_shown_as_a_reference_and_sent_in_the_wires_shape(
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
    call, answer = TURNS[kind]
    named = data_file(call).replace(b'"current_time"', b'"laptop__current_time"')
    wire.play(Reply(body=named), Reply(body=data_file(answer)))
    with running_mind(tmp_path, script=None, **env) as mind:
        token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
        with HandThread(screenshot_hand(), mind.address, token):
            gateway = Gateway.connect(mind)
            try:
                key = gateway.create(f"p_{uuid.uuid4().hex[:12]}")
                start = gateway.head()
                sent = gateway.send(key, "what time is it?", "ask-time")
                gateway.wait_runs_ended(start, {sent.run_id})
                history = gateway.history(key).messages
                summary = gateway.history(key, mode=common_pb2.DETAIL_MODE_SUMMARY).messages
            finally:
                gateway.close()
        assert _media_rows(mind) == 1

    [tool] = [m for m in history if m.role == common_pb2.MESSAGE_ROLE_TOOL]
    digest = hashlib.sha256(PNG).hexdigest()
    assert [(i.digest, i.media_type, i.size_bytes) for i in tool.images] == [
        (digest, "image/png", len(PNG))
    ]
    [hidden] = [m for m in summary if m.role == common_pb2.MESSAGE_ROLE_TOOL]
    assert not hidden.images and hidden.result_summary.endswith(", 1 image")
    assert len(wire.requests) == 2
    shown = _result_images(kind, wire.requests[1].json())
    marker = f"[image #{tool.id}]"
    if kind == "anthropic":
        text, image = shown
        assert text["type"] == "text" and marker in text["text"]
        assert image == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": DATA},
        }
    elif kind == "gemini":
        response, image = shown
        assert marker in response["functionResponse"]["response"]["output"]
        assert image == {"inlineData": {"mimeType": "image/png", "data": DATA}}
    else:
        result, images = shown
        assert isinstance(result["content"], str) and marker in result["content"]
        assert images == {
            "role": "user",
            "content": [
                {"type": "text", "text": f"[images from tool call {result['tool_call_id']}]"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{DATA}"}},
            ],
        }
