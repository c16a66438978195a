"""Reading OpenAI chat completions requests: what the endpoint acts on, and clear refusals."""

from __future__ import annotations

import base64
import json

import pytest

from face.openai.turn import named_key
from face.openai.wire import BadRequest, parse_chat_request

PNG = b"\x89PNG\r\n\x1a\n-not-really"


def body(**fields: object) -> bytes:
    return json.dumps({"model": "default", **fields}).encode()


def test_the_last_user_message_is_the_turn_and_earlier_person_messages_are_kept_to_check() -> None:
    request = parse_chat_request(
        body(
            messages=[
                {"role": "system", "content": "ignored: the profile's persona speaks"},
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "a reply"},
                {"role": "user", "content": [{"type": "text", "text": "second"}]},
                {"role": "user", "content": "the new one"},
            ],
            stream=True,
            temperature=0.2,
            user="app-user",
        )
    )
    assert request.text == "the new one"
    assert request.earlier == ["first", "second"]
    assert request.stream and request.user == "app-user" and request.model == "default"


def test_an_image_comes_from_a_data_url() -> None:
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    request = parse_chat_request(
        body(
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what is this?"},
                        {"type": "image_url", "image_url": {"url": url}},
                    ],
                }
            ]
        )
    )
    (image,) = request.images
    assert image.media_type == "image/png" and image.data == PNG
    assert request.text == "what is this?"


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (b"not json", "invalid request"),
        (body(messages=[]), "messages"),
        (json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(), "model"),
        (body(messages=[{"role": "assistant", "content": "hi"}]), "must be the person's"),
        (body(messages=[{"role": "user", "content": "   "}]), "is empty"),
        (
            body(messages=[{"role": "user", "content": [{"type": "input_audio"}]}]),
            "'input_audio' are not supported",
        ),
        (
            body(
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "image_url", "image_url": {"url": "http://host/a.png"}}
                        ],
                    }
                ]
            ),
            "must be data URLs",
        ),
        (
            body(
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}}
                        ],
                    }
                ]
            ),
            "not valid base64",
        ),
    ],
)
def test_a_malformed_request_is_refused_with_400_saying_why(payload: bytes, says: str) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_chat_request(payload)
    assert refused.value.status == 400
    assert says in refused.value.message
    assert refused.value.body()["error"]["type"] == "invalid_request_error"


def test_a_user_name_is_one_conversation_per_principal() -> None:
    assert named_key("alice", "u1") == named_key("alice", "u1")
    assert named_key("alice", "u1") != named_key("bob", "u1")
    assert named_key("alice", "u1").startswith("p_openai-") and len(named_key("alice", "u")) <= 64
