"""A provider that plays recorded structured answers in order and keeps every request."""

from __future__ import annotations

import json
from typing import Any

from mind.providers.base import (
    ErrorKind,
    EventSink,
    ProviderError,
    ProviderRequest,
    ProviderResult,
    StopReason,
)

# An answer: JSON text as recorded (valid or not), an object (sent as JSON), or a provider
# error (`ProviderError`).
Answer = str | dict[str, Any] | ProviderError


class RecordedProvider:
    name = "recorded"
    model = "recorded"

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[ProviderRequest] = []

    async def complete(self, request: ProviderRequest, on_event: EventSink) -> ProviderResult:
        self.requests.append(request)
        if not self.answers:
            raise AssertionError(f"an unexpected call: {request.system.splitlines()[0]}")
        answer = self.answers.pop(0)
        if isinstance(answer, ProviderError):
            return ProviderResult(stop_reason=StopReason.ERROR, error=answer)
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return ProviderResult(text=text)

    async def aclose(self) -> None:
        return None


UNAVAILABLE = ProviderError(ErrorKind.UNAVAILABLE, "upstream overloaded")
