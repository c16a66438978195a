"""The one Provider interface the agent core depends on.

Every wire adapter (OpenAI-compatible, Anthropic, Gemini) and the Scripted fixture implement
`Provider.complete`: it streams one model response, reports deltas through a callback as they
arrive, and returns the assembled batch.

Contract: `complete` never raises for provider or transport failures — they end the call with a
`ProviderResult` whose `stop_reason` is `ERROR` and whose `error` says what happened (pi-ai's
"streams never throw"). Cancellation is the one exception: cancelling the awaiting task raises
`asyncio.CancelledError` inside `complete`, which must close the HTTP stream at once and let
the cancellation propagate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable


class StopReason(StrEnum):
    STOP = "stop"
    LENGTH = "length"
    TOOL_USE = "tool_use"
    REFUSAL = "refusal"
    SAFETY = "safety"
    ERROR = "error"
    ABORTED = "aborted"


class ThinkingLevel(StrEnum):
    OFF = "off"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"


class ErrorKind(StrEnum):
    # 401/403 or an invalid key: the operator must fix a setting.
    CONFIGURATION = "configuration"
    # 429, 5xx or overload after the bounded retries were spent.
    UNAVAILABLE = "unavailable"
    # The server rejected the request (400 other than a bad key).
    REQUEST = "request"
    # The request (prompt plus requested output) does not fit the model's context window: the
    # caller should compact the conversation and retry once. Never retried by the adapter's
    # retry budget, since the same request fails the same way.
    CONTEXT_OVERFLOW = "context_overflow"
    # An error event or malformed data in the middle of a stream.
    STREAM = "stream"
    # The provider script (Scripted fixture) or the response made no sense.
    PROTOCOL = "protocol"


@dataclass(frozen=True)
class ProviderError:
    kind: ErrorKind
    message: str
    # HTTP status when there was one.
    status: int | None = None
    # For CONTEXT_OVERFLOW: the context window the server said it has, when it said one.
    window: int | None = None


@dataclass(frozen=True)
class ImagePart:
    mime_type: str
    # Base64 of the image bytes.
    data_base64: str


@dataclass(frozen=True)
class ThinkingBlock:
    """Model reasoning. `signature` and `redacted_data` must be sent back byte for byte."""

    text: str = ""
    signature: str | None = None
    # Anthropic `redacted_thinking` payload (opaque).
    redacted_data: str | None = None


@dataclass(frozen=True)
class ToolCall:
    """One tool call requested by the model.

    `arguments` is None when `raw_arguments` was not a JSON object; `argument_error` then says
    why, and the core answers the model with a tool error instead of executing.

    An adapter sets `id` to the model's id (or a generated one when the model sent none); the
    agent loop replaces `id` with a Mind-wide id and keeps `provider_id`, the model's own id,
    which the provider view sends back so the model sees the ids it issued.
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str = ""
    argument_error: str | None = None
    # Gemini `thoughtSignature` attached to the functionCall part, sent back unchanged.
    thought_signature: str | None = None
    # The id the model gave this call on its wire; empty when it sent none.
    provider_id: str = ""


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    description: str
    # JSON Schema of the arguments object.
    parameters: dict[str, Any]


@dataclass
class ProviderMessage:
    """A message in provider-neutral form, already shaped by the provider view."""

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    images: list[ImagePart] = field(default_factory=list)
    # User only, when images belong between pieces of the text (a forwarded record's, each
    # after its item): `text` and `images` in the order a model that sees images gets them.
    # Empty otherwise (the text, then the images); a model that cannot see images always gets
    # `text` with a placeholder per image.
    parts: list[str | ImagePart] = field(default_factory=list)
    # Assistant only.
    thinking: list[ThinkingBlock] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    # Tool only.
    tool_call_id: str = ""
    tool_name: str = ""
    is_error: bool = False


@dataclass(frozen=True)
class OutputSchema:
    """The JSON Schema the answer must follow, under a name the wire may show the model.

    Each adapter holds the model to it as its catalog entry's `structured_output` says (a
    `response_format`, a forced tool call whose input becomes the answer's text, Gemini's
    `responseJsonSchema`) or not at all ("none": the prompt alone asks for it)."""

    name: str
    schema: dict[str, Any]


@dataclass
class ProviderRequest:
    system: str
    messages: list[ProviderMessage]
    tools: list[ToolDefinition] = field(default_factory=list)
    thinking: ThinkingLevel = ThinkingLevel.OFF
    max_output_tokens: int | None = None
    # A JSON answer wanted, with no `tools` (the decision layer's stages).
    output: OutputSchema | None = None
    # Thinking tokens for `thinking`, where the wire takes a budget (a profile's
    # `thinking_budgets`); None: the adapter's own budget for the level.
    thinking_budget: int | None = None


@dataclass(frozen=True)
class Usage:
    """Token counts of one response, meaning the same on every wire.

    `input_tokens` is the whole prompt the request carried, cached parts included (OpenAI
    `prompt_tokens` and Gemini `promptTokenCount` already count them; Anthropic's
    `input_tokens` leaves out cache reads and writes, so its adapter adds them): compared with
    the model's context window, it says how full the window was. `cached_tokens` is the part of
    it read from the provider's prompt cache. `output_tokens` is everything the model generated,
    reasoning included (OpenAI's `completion_tokens` counts it, Gemini's `thoughtsTokenCount`
    is added to `candidatesTokenCount`); `reasoning_tokens` is the part of it spent reasoning,
    where the wire says (Anthropic's does not: 0).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass
class ProviderResult:
    """One complete model response."""

    text: str = ""
    thinking: list[ThinkingBlock] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = StopReason.STOP
    error: ProviderError | None = None
    model: str = ""


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A tool call started or grew; `arguments_fragment` is raw JSON text."""

    index: int
    id: str
    name: str
    arguments_fragment: str = ""


StreamEvent = TextDelta | ThinkingDelta | ToolCallDelta
EventSink = Callable[[StreamEvent], None]


@runtime_checkable
class Provider(Protocol):
    """A model endpoint. See the module docstring for the error and cancellation contract."""

    name: str
    model: str

    async def complete(self, request: ProviderRequest, on_event: EventSink) -> ProviderResult: ...

    async def aclose(self) -> None: ...
