"""A tool result's images never reach a model that cannot see images: each adapter, over real
HTTP to a local wire server, sends the placeholder text in the result instead (and, on the
OpenAI wire, no user message of images after it)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from provider_wire import Reply, WireServer, data_file

from mind.providers._adapter import StreamingAdapter
from mind.providers.base import ImagePart, ProviderMessage, ProviderRequest, ToolCall
from mind.providers.vision import IMAGE_UNSUPPORTED
from tobe.config import ModelEntry

ANSWERS = {
    "openai": "openai/e2e_answer.sse",
    "anthropic": "anthropic/basic_response.txt",
    "gemini": "gemini/max_tokens.sse",
}
TEXT = "[image #7] the screen"
BLIND = f"{TEXT}\n{IMAGE_UNSUPPORTED}"


def request() -> ProviderRequest:
    call = ToolCall(id="call_1", name="laptop__shot", arguments={}, raw_arguments="{}")
    return ProviderRequest(
        system="",
        messages=[
            ProviderMessage(role="user", text="show me the screen"),
            ProviderMessage(role="assistant", tool_calls=[call]),
            ProviderMessage(
                role="tool",
                text=TEXT,
                images=[ImagePart("image/png", "iVBORw0KGgo=")],
                tool_call_id="call_1",
                tool_name="laptop__shot",
            ),
        ],
    )


@pytest.mark.parametrize("kind", sorted(ANSWERS))
async def test_a_blind_model_gets_the_placeholder_in_the_tool_result_instead_of_its_images(
    wire: WireServer, provider_for: Callable[..., StreamingAdapter], kind: str
) -> None:
    wire.play(Reply(body=data_file(ANSWERS[kind])))
    blind = ModelEntry(id="plain", context_window=100_000, max_output=256, vision=False)
    provider = provider_for(kind, model="plain", models=[blind])
    result = await provider.complete(request(), lambda _event: None)
    assert result.error is None
    body = wire.requests[0].json()
    if kind == "anthropic":
        last = body["messages"][-1]
        assert last == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": BLIND}],
        }
    elif kind == "gemini":
        last = body["contents"][-1]
        response = {"id": "call_1", "name": "laptop__shot", "response": {"output": BLIND}}
        assert last == {"role": "user", "parts": [{"functionResponse": response}]}
    else:
        last = body["messages"][-1]
        assert last == {"role": "tool", "tool_call_id": "call_1", "content": BLIND}
