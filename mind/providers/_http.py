"""HTTP plumbing shared by the wire adapters: retries, error mapping, SSE, images, secrets.

Only the provider adapters import httpx. Everything here turns transport and HTTP failures
into `ProviderError`s; nothing raises to the agent core except cancellation.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import httpx
from httpx_sse import EventSource, ServerSentEvent

from mind.providers.base import ErrorKind, ImagePart, ProviderError
from tobe.runtime.backoff import Backoff
from tobe.runtime.redact import MASK, redact

log = logging.getLogger("mind.providers")

# The longest wait a `retry-after` hint may impose before the call gives up instead.
MAX_RETRY_WAIT = 60.0
# Bytes of an error body kept for the message.
_ERROR_BODY_LIMIT = 16 * 1024
# Bytes of a stream's end kept to find an error object sent without `data:`.
_TAIL_LIMIT = 64 * 1024
_RETRYABLE = {408, 409, 429, 500, 502, 503, 504, 529}
_SSE_FIELDS = {"data", "event", "id", "retry"}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


@dataclass(frozen=True)
class Secret:
    """An API key kept out of every message this module builds."""

    value: str = field(repr=False)

    def scrub(self, text: str) -> str:
        if self.value:
            text = text.replace(self.value, MASK)
        return redact(text)


class OverflowSign(NamedTuple):
    """One way a wire's error body says the request does not fit the model's context window:
    a field of the error object and a pattern its value (as text) contains."""

    field: str
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class Wire:
    """What the retry loop needs to know about one provider."""

    provider: str
    # Environment variable an operator would usually set for this provider's key.
    key_env: str
    secret: Secret
    max_retries: int
    backoff_factory: Callable[[], Backoff]
    # How this wire's error bodies say the request is too long for the context window.
    overflow: tuple[OverflowSign, ...]


def data_url(image: ImagePart) -> str:
    return f"data:{image.mime_type};base64,{image.data_base64}"


def _retry_after(headers: httpx.Headers, body: Any) -> float | None:
    """Server's wait hint: `retry-after-ms`, `retry-after` (seconds or date), Gemini RetryInfo."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            pass
    for detail in _error_details(body):
        if str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def _error_object(body: Any) -> dict[str, Any]:
    """The `error` object of an error body (also inside Gemini's one-element array)."""
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _error_fields(body: Any) -> dict[str, Any]:
    """The fields describing an error: the `error` object, or the body itself when it has
    none (vLLM's `{"object": "error", "message": …}`)."""
    error = _error_object(body)
    if error:
        return error
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        # LM Studio: `{"error": "<message>"}`.
        return {"message": body["error"]}
    return body if isinstance(body, dict) else {}


def _is_context_overflow(signs: tuple[OverflowSign, ...], body: Any) -> bool:
    fields = _error_fields(body)
    return any(
        sign.field in fields and sign.pattern.search(str(fields[sign.field])) for sign in signs
    )


# How servers state their window in an over-window message: OpenAI and vLLM "maximum context
# length is N tokens", vLLM "context length is only N tokens", LM Studio "context length of
# only N tokens" and "context length only supports N tokens".
_WINDOW_SAID = re.compile(
    r"(?:maximum context length is|context length is only|context length of only|"
    r"context length only supports) (\d+) tokens"
)


def _reported_window(body: Any) -> int | None:
    """The window an over-window error names: llama-server's `n_ctx`, or the message's."""
    fields = _error_fields(body)
    n_ctx = fields.get("n_ctx")
    if isinstance(n_ctx, int) and n_ctx > 0:
        return n_ctx
    said = _WINDOW_SAID.search(str(fields.get("message") or ""))
    return int(said.group(1)) if said else None


def _error_details(body: Any) -> list[dict[str, Any]]:
    details = _error_object(body).get("details")
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def error_message(body: Any, fallback: str) -> str:
    error = _error_object(body)
    message = error.get("message") or _error_fields(body).get("message")
    kind = error.get("type") or error.get("status") or error.get("code")
    text = str(message or fallback).strip()
    return f"{kind}: {text}" if kind and str(kind) not in text else text


def _is_invalid_key(body: Any) -> bool:
    """Gemini answers a bad key with 400 and reason API_KEY_INVALID, not 401."""
    return any(d.get("reason") == "API_KEY_INVALID" for d in _error_details(body))


def parse_json(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def classify_status(
    wire: Wire, status: int, headers: httpx.Headers, raw: bytes
) -> tuple[ProviderError, bool, float | None]:
    """(error, retryable, server's wait hint) for a non-2xx response."""
    body = parse_json(raw)
    detail = wire.secret.scrub(
        error_message(body, raw.decode("utf-8", "replace")[:500] or f"HTTP {status}")
    )
    if status in (401, 403) or (status == 400 and _is_invalid_key(body)):
        message = (
            f"{wire.provider} refused the API key (HTTP {status}: {detail}). Set a valid key "
            f"with TOBE_PROVIDER__API_KEY (or {wire.key_env}) or [provider] api_key in the "
            "config file, and check that it may use the configured model"
        )
        return ProviderError(ErrorKind.CONFIGURATION, message, status), False, None
    if _is_context_overflow(wire.overflow, body):
        # Checked before the retryable statuses: the same request would fail the same way.
        message = (
            f"{wire.provider} refused the request as too long for the model's context window "
            f"(HTTP {status}: {detail})"
        )
        error = ProviderError(ErrorKind.CONTEXT_OVERFLOW, message, status, _reported_window(body))
        return error, False, None
    if status in _RETRYABLE:
        message = f"{wire.provider} is unavailable (HTTP {status}: {detail})"
        return (
            ProviderError(ErrorKind.UNAVAILABLE, message, status),
            True,
            _retry_after(headers, body),
        )
    message = f"{wire.provider} rejected the request (HTTP {status}: {detail})"
    return ProviderError(ErrorKind.REQUEST, message, status), False, None


async def read_body(response: httpx.Response) -> bytes:
    """At most the first 16 KiB of a body: enough for an error message."""
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) >= _ERROR_BODY_LIMIT:
            break
    return bytes(data[:_ERROR_BODY_LIMIT])


class RetryBudget:
    """The retries one `complete` call may spend, shared by every failure that allows one."""

    def __init__(self, wire: Wire) -> None:
        self._wire = wire
        self._backoff = wire.backoff_factory()
        self._spent = 0
        # The last error a retry was spent on (what went wrong before a silence, if anything).
        self.last: ProviderError | None = None

    async def wait(self, error: ProviderError, hint: float | None) -> ProviderError | None:
        """Sleep before the next attempt; or the final error when retrying is not allowed."""
        if self._spent >= self._wire.max_retries:
            return error
        if hint is not None and hint > MAX_RETRY_WAIT:
            return ProviderError(
                error.kind, f"{error.message}; the server asked to wait {hint:.0f}s", error.status
            )
        self._spent += 1
        self.last = error
        delay = hint if hint is not None else self._backoff.next_delay()
        log.warning(
            "%s: %s; retry %d/%d in %.2fs",
            self._wire.provider,
            error.message,
            self._spent,
            self._wire.max_retries,
            delay,
        )
        await asyncio.sleep(delay)
        return None


async def open_stream(
    client: httpx.AsyncClient, wire: Wire, budget: RetryBudget, build: Callable[[], httpx.Request]
) -> httpx.Response | ProviderError:
    """A 2xx streaming response (the caller closes it), or the error once retries are spent.

    429, 5xx, 529 (overloaded) and transport failures before the first byte are retried,
    waiting what the server asks (`retry-after`, RetryInfo) or else the backoff delay.
    """
    while True:
        try:
            request = build()
        except httpx.InvalidURL as exc:
            return ProviderError(
                ErrorKind.CONFIGURATION,
                f"{wire.provider}: the base URL is not valid ({exc}); fix TOBE_PROVIDER__BASE_URL "
                "or [provider] base_url",
            )
        hint: float | None = None
        try:
            response = await client.send(request, stream=True)
        except httpx.TransportError as exc:
            error = ProviderError(
                ErrorKind.UNAVAILABLE,
                wire.secret.scrub(
                    f"{wire.provider}: cannot reach {request.url.copy_with(query=None)} "
                    f"({type(exc).__name__}: {exc})"
                ),
            )
        else:
            if response.is_success:
                return response
            try:
                raw = await read_body(response)
            except httpx.HTTPError:
                raw = b""
            finally:
                await response.aclose()
            error, retryable, hint = classify_status(
                wire, response.status_code, response.headers, raw
            )
            if not retryable:
                return error
        final = await budget.wait(error, hint)
        if final is not None:
            return final


class _Terminated(httpx.AsyncByteStream):
    """The response body followed by one blank line, keeping the last bytes seen.

    httpx-sse follows the SSE spec and drops an event the stream does not end with a blank
    line; Gemini's last event is sometimes unterminated and must still be dispatched, so the
    end of the body counts as the end of the pending event. The kept tail lets an adapter find
    an error object a server wrote without `data:` (httpx-sse ignores such lines as unknown
    fields, which is right for SSE but hides the error).
    """

    def __init__(self, response: httpx.Response, on_bytes: Callable[[], None]) -> None:
        self._response = response
        self._on_bytes = on_bytes
        self.tail = bytearray()
        # Whether the start of the body was dropped from `tail` (its first line may be partial).
        self.trimmed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_bytes():
            self._on_bytes()
            self.tail += chunk
            if len(self.tail) > 2 * _TAIL_LIMIT:
                del self.tail[:-_TAIL_LIMIT]
                self.trimmed = True
            yield chunk
        yield b"\n\n"

    async def aclose(self) -> None:
        await self._response.aclose()


def _is_sse_line(line: str) -> bool:
    """A comment or one of the fields SSE defines (anything else is ignored by parsers)."""
    return line.startswith(":") or line.partition(":")[0] in _SSE_FIELDS


class SSEBody:
    """Server-sent events of a streaming response, parsed by httpx-sse; `on_bytes` is called
    as each piece of the body arrives."""

    def __init__(self, response: httpx.Response, on_bytes: Callable[[], None]) -> None:
        self._stream = _Terminated(response, on_bytes)
        content_type = response.headers.get("content-type", "text/event-stream")
        self._source = EventSource(
            httpx.Response(200, headers={"content-type": content_type}, stream=self._stream)
        )

    def events(self) -> AsyncIterator[ServerSentEvent]:
        return self._source.aiter_sse()

    def trailing_text(self) -> str | None:
        """What the body ends with after its last SSE line, if anything: a raw JSON error
        object (Gemini) or other text a server or proxy wrote outside the event format."""
        text = self._stream.tail.decode("utf-8", "replace")
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        start = len(lines)
        while start > 0 and lines[start - 1].strip() and not _is_sse_line(lines[start - 1]):
            start -= 1
        if start == len(lines) or (start == 0 and self._stream.trimmed):
            # Nothing after the last event, or a line cut by the tail limit: not judged.
            return None
        return "\n".join(lines[start:]).strip()


def retryable_in_stream(error: ProviderError) -> bool:
    """An overload or server failure reported in a stream; retried if nothing was reported."""
    return error.kind == ErrorKind.STREAM and error.status in _RETRYABLE


def is_event_stream(response: httpx.Response) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


def transport_error(wire: Wire, exc: httpx.HTTPError) -> ProviderError:
    return ProviderError(
        ErrorKind.STREAM,
        wire.secret.scrub(f"{wire.provider}: the stream broke ({type(exc).__name__}: {exc})"),
    )


# Anthropic error event types and the HTTP status the same failure has before a stream.
_EVENT_STATUS = {"overloaded_error": 529, "api_error": 500, "rate_limit_error": 429}


def stream_error(wire: Wire, body: Any, fallback: str) -> ProviderError:
    """An error reported inside a 200 response (error event, error object); a request too
    long for the window is one too (LM Studio answers it with a 200 and an error event)."""
    error = _error_object(body)
    code = error.get("code")
    status = code if isinstance(code, int) else _EVENT_STATUS.get(str(error.get("type")))
    message = wire.secret.scrub(error_message(body, fallback))
    if _is_context_overflow(wire.overflow, body):
        return ProviderError(
            ErrorKind.CONTEXT_OVERFLOW,
            f"{wire.provider} refused the request as too long for the model's context window "
            f"({message})",
            status,
            _reported_window(body),
        )
    return ProviderError(ErrorKind.STREAM, f"{wire.provider}: {message}", status)


def chunk_error(wire: Wire, chunk: Any, raw: str) -> ProviderError | None:
    """Why a streamed JSON chunk cannot be used: not an object, or an error event."""
    if not isinstance(chunk, dict):
        return ProviderError(ErrorKind.PROTOCOL, f"{wire.provider}: unreadable chunk {raw[:200]!r}")
    if "error" in chunk:
        return stream_error(wire, chunk, "error event")
    return None


def non_stream_body_error(wire: Wire, raw: bytes) -> ProviderError:
    body = parse_json(raw)
    if _error_object(body):
        return stream_error(wire, body, "error")
    return ProviderError(
        ErrorKind.PROTOCOL,
        f"{wire.provider}: expected a server-sent event stream, got "
        f"{wire.secret.scrub(raw[:200].decode('utf-8', 'replace'))!r}",
    )
