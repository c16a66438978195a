"""The provider the Mind calls: the real one, recording each request's usage.

Every attribute but `complete` and `aclose` is the wrapped provider's (its catalog `info` and
whatever else callers read), so wrapping changes nothing but the recording. A request that is
cancelled leaves no row; one that ends in an error leaves a row with the tokens it reported
(usually none): it was made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mind.providers.base import EventSink, Provider, ProviderRequest, ProviderResult
from mind.store.models import utcnow
from mind.usage import attribution
from mind.usage.ledger import UsageRow
from mind.usage.observed import FirstToken, observe
from tobe import telemetry


class MeteredProvider:
    def __init__(self, inner: Provider, record: Callable[[UsageRow], None]) -> None:
        self.inner = inner
        self._record = record
        self.name = inner.name
        self.model = inner.model

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, request: ProviderRequest, on_event: EventSink) -> ProviderResult:
        who = attribution.current()
        model = self.model or ""
        with telemetry.span(
            f"chat {model}",
            kind="client",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": self.name,
                "gen_ai.request.model": model,
                "tobe.purpose": who.purpose,
            },
        ) as span:
            timing = FirstToken(on_event)
            result = await self.inner.complete(request, timing.sink)
            observe(span, self.name, model, result, timing)
        usage = result.usage
        self._record(
            UsageRow(
                recorded_at=utcnow(),
                conversation_key=who.conversation_key,
                run_id=who.run_id,
                principal=who.principal,
                provider=self.name,
                model=self.model or result.model,
                purpose=who.purpose,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cached_tokens=usage.cached_tokens,
                reasoning_tokens=usage.reasoning_tokens,
            )
        )
        return result

    async def aclose(self) -> None:
        await self.inner.aclose()
