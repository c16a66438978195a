"""OpenAI's chat completions wire: the request read strictly enough to act on, the answers built.

Only what ToBe acts on is read: `model` (a profile), `messages` (the last one is the person's
new message; the earlier user messages are checked against the conversation), `stream`,
`user` (names the conversation). Sampling options (`temperature`, `max_tokens`, …) are
accepted and ignored: the profile decides how the agent's model runs. System messages are
ignored too: the profile's persona speaks.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tobe.v1 import common_pb2

# Images as data URLs only: the Face never fetches an address a request names.
_DATA_URL_PREFIX = "data:"


class BadRequest(Exception):
    """A request the endpoint refuses; `status` and OpenAI's error `type`/`code` go out."""

    def __init__(
        self, status: int, message: str, code: str = "", kind: str = "invalid_request_error"
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.kind = kind

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": None,
                "code": self.code or None,
            }
        }


class _ImageUrl(BaseModel):
    url: str


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None
    image_url: _ImageUrl | None = None


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[_Part] | None = None


class _Request(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1)
    messages: list[_Message] = Field(min_length=1)
    stream: bool = False
    user: str | None = None


@dataclass(frozen=True)
class ChatRequest:
    """What a chat completions request asks of the agent."""

    model: str
    text: str
    images: list[common_pb2.ImageUpload] = field(default_factory=list)
    earlier: list[str] = field(default_factory=list)
    stream: bool = False
    user: str = ""


def parse_chat_request(body: bytes) -> ChatRequest:
    """The request in `body`, or BadRequest 400 saying what is wrong with it."""
    try:
        request = _Request.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise BadRequest(400, f"invalid request: {where}: {first['msg']}") from exc
    last = request.messages[-1]
    if last.role != "user":
        raise BadRequest(
            400, "the last message must be the person's (role 'user'): it is what the agent gets"
        )
    text, images = _content(last.content)
    if not text.strip() and not images:
        raise BadRequest(400, "the last user message is empty")
    earlier = [
        _content(message.content)[0] for message in request.messages[:-1] if message.role == "user"
    ]
    return ChatRequest(
        model=request.model,
        text=text,
        images=images,
        earlier=earlier,
        stream=request.stream,
        user=request.user or "",
    )


def _content(content: str | list[_Part] | None) -> tuple[str, list[common_pb2.ImageUpload]]:
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    images: list[common_pb2.ImageUpload] = []
    for part in content:
        if part.type == "text":
            texts.append(part.text or "")
        elif part.type == "image_url" and part.image_url is not None:
            images.append(_image(part.image_url.url))
        else:
            raise BadRequest(400, f"content parts of type {part.type!r} are not supported")
    return "\n".join(texts), images


def _image(url: str) -> common_pb2.ImageUpload:
    """An image given as a `data:<type>;base64,<data>` URL (the Mind checks type and size)."""
    if not url.startswith(_DATA_URL_PREFIX) or ";base64," not in url:
        raise BadRequest(400, "images must be data URLs (data:image/png;base64,…), not addresses")
    header, _, data = url[len(_DATA_URL_PREFIX) :].partition(";base64,")
    try:
        decoded = base64.b64decode(data, validate=True)
    except binascii.Error as exc:
        raise BadRequest(400, "an image's data URL is not valid base64") from exc
    return common_pb2.ImageUpload(media_type=header, data=decoded)


def completion(completion_id: str, model: str, text: str, created: int) -> dict[str, Any]:
    """A whole `chat.completion` object."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }


def chunk(
    completion_id: str, model: str, created: int, delta: dict[str, str], finish: str | None = None
) -> str:
    """One `chat.completion.chunk` as a server-sent event."""
    body = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


STREAM_END = "data: [DONE]\n\n"


def model_list(profiles: list[common_pb2.ProfileInfo]) -> dict[str, Any]:
    """`GET /v1/models`: each profile of the agent, as a model."""
    now = int(time.time())
    return {
        "object": "list",
        "data": [
            {"id": profile.name, "object": "model", "created": now, "owned_by": "tobe"}
            for profile in profiles
        ],
    }
