"""What every streaming wire adapter shares: client, key, retries and the call skeleton."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

import httpx

from mind.providers._assembly import Assembly
from mind.providers._http import (
    OverflowSign,
    RetryBudget,
    Secret,
    SSEBody,
    Wire,
    is_event_stream,
    non_stream_body_error,
    open_stream,
    read_body,
    retryable_in_stream,
    transport_error,
)
from mind.providers._silence import Silence, Silenced
from mind.providers.base import (
    EventSink,
    OutputSchema,
    ProviderError,
    ProviderRequest,
    ProviderResult,
    StopReason,
    ThinkingLevel,
)
from mind.providers.catalog import ModelInfo, clamp_thinking
from tobe.config import ProviderSettings
from tobe.runtime.backoff import Backoff


class StreamingAdapter(ABC):
    """One wire API over httpx. Subclasses build the request and read the events.

    Contract (see `base.py`): `complete` never raises for provider or transport failures;
    cancelling it closes the HTTP stream (the `finally` closes the response, which drops the
    connection) and lets `CancelledError` propagate. Retries share one budget per call: HTTP
    429/5xx/529 and transport failures before the body, and an overload reported inside the
    stream before anything reached `on_event`; once a delta was reported nothing is retried.
    A request too long for the context window (`overflow`) is never retried, whatever its status.
    A provider silent for `first_byte_timeout` (see `_silence`) ends the call with an error
    naming it, however many retries were left.
    """

    name = ""
    key_env = ""
    default_base_url = ""
    # How this wire says a request does not fit the context window; every other error body
    # keeps its usual kind.
    overflow: ClassVar[tuple[OverflowSign, ...]]

    def __init__(
        self,
        settings: ProviderSettings,
        info: ModelInfo,
        *,
        client: httpx.AsyncClient | None = None,
        backoff_factory: Callable[[], Backoff] = Backoff,
    ) -> None:
        self.model = settings.model
        self.info = info
        self.base_url = (settings.base_url or self.default_base_url).rstrip("/")
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(settings.timeout, connect=min(settings.timeout, 15.0))
        )
        self._owns_client = client is None
        self._first_byte_timeout = settings.first_byte_timeout
        key = settings.api_key.get_secret_value() if settings.api_key else ""
        self._key = Secret(key)
        self._wire = Wire(
            self.name, self.key_env, self._key, settings.max_retries, backoff_factory, self.overflow
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    def thinking_level(self, request: ProviderRequest) -> ThinkingLevel:
        """The level actually sent; the core already warned about a clamp."""
        return clamp_thinking(self.info, request.thinking)[0]

    def structured(self, request: ProviderRequest) -> tuple[OutputSchema, str] | None:
        """The wanted answer schema and how this model is held to it; None when nothing
        holds it (no schema asked for, or the model's `structured_output` is "none")."""
        if request.output is None or self.info.structured_output == "none":
            return None
        return request.output, self.info.structured_output

    def max_output(self, request: ProviderRequest) -> int:
        wanted = request.max_output_tokens or self.info.max_output
        return max(1, min(wanted, self.info.max_output))

    @abstractmethod
    def url(self) -> str: ...

    @abstractmethod
    def headers(self) -> dict[str, str]: ...

    @abstractmethod
    def body(self, request: ProviderRequest) -> dict[str, Any]: ...

    @abstractmethod
    async def read_events(self, sse: SSEBody, assembly: Assembly) -> None:
        """Feed every event into `assembly`; set its stop reason or error."""

    def incomplete_message(self) -> str:
        return f"{self.name}: the stream ended before the response was complete"

    async def complete(self, request: ProviderRequest, on_event: EventSink) -> ProviderResult:
        result = await self._complete(request, on_event)
        held = self.structured(request)
        if held is not None and held[1] == "tool":
            return forced_answer(result, held[0].name)
        return result

    async def _complete(self, request: ProviderRequest, on_event: EventSink) -> ProviderResult:
        body = self.body(request)
        url, headers = self.url(), self.headers()
        budget = RetryBudget(self._wire)
        silence = Silence(self.name, self._first_byte_timeout)
        while True:
            result, emitted = await self._attempt(
                budget,
                lambda: self._client.build_request("POST", url, headers=headers, json=body),
                on_event,
                silence,
            )
            error = result.error
            if error is None or emitted or not retryable_in_stream(error):
                return result
            try:
                async with silence.bound():
                    if await budget.wait(error, None) is not None:
                        return result
            except Silenced:
                return self._failed(silence.error(budget.last))

    async def _attempt(
        self,
        budget: RetryBudget,
        build: Callable[[], httpx.Request],
        on_event: EventSink,
        silence: Silence,
    ) -> tuple[ProviderResult, bool]:
        """One streamed response, and whether it reported anything to `on_event`."""
        silence.next_response()
        try:
            async with silence.bound():
                outcome = await open_stream(self._client, self._wire, budget, build)
        except Silenced:
            return self._failed(silence.error(budget.last)), False
        if isinstance(outcome, ProviderError):
            return self._failed(outcome), False
        assembly = Assembly(self.model, on_event)
        try:
            async with silence.bound():
                if not is_event_stream(outcome):
                    error = non_stream_body_error(self._wire, await read_body(outcome))
                    return self._failed(error), False
                await self.read_events(SSEBody(outcome, silence.heard), assembly)
        except httpx.HTTPError as exc:
            assembly.fail(transport_error(self._wire, exc))
        except Silenced:
            assembly.fail(silence.error(budget.last))
        finally:
            await outcome.aclose()
        return assembly.result(self.incomplete_message()), assembly.emitted

    def _failed(self, error: ProviderError) -> ProviderResult:
        return ProviderResult(stop_reason=StopReason.ERROR, error=error, model=self.model)


def forced_answer(result: ProviderResult, name: str) -> ProviderResult:
    """A forced tool call's input as the answer's text (structured output "tool"): the caller
    asked for an answer, not for a tool to run."""
    call = next((call for call in result.tool_calls if call.name == name), None)
    if call is None:
        return result
    stop = StopReason.STOP if result.stop_reason is StopReason.TOOL_USE else result.stop_reason
    return replace(result, text=call.raw_arguments, tool_calls=[], stop_reason=stop)
