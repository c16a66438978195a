"""The compaction engine: a summary comes to stand for an old prefix of a conversation.

Raw messages stay append-only; what changes is what the provider view shows: the latest
summary and the messages after it. A compaction

1. reads the latest summary and the messages after it (`records.load`);
2. plans the cut: the most recent tool batches stay verbatim (within `keep_ratio` of the
   budget; at most the last two for a requested compaction; always every batch from the first
   one whose calls are protected, i.e. still open), and a cut never falls inside a batch;
3. summarises the earlier summary and the messages before the cut, in chunks that each fit
   the model's window (a summary of summaries), each call's output bounded by
   `summary_tokens`; a chunk the provider still finds too long is split, never retried as is;
4. records the environment (`environment.environment_summary`), and commits the summary with
   its `context_compacted` event in one transaction, compare-and-set on the conversation's
   context generation: a concurrent change makes it start again from 1, never overwrite.

The caller holds the conversation's mutation lease (a run, or the actor for a requested
compaction), so a compaction never interleaves with a run of the same conversation; its
provider calls are awaited like any run's, so other conversations go on meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from mind.context import records, transcript
from mind.context.budget import Budget, Size, TokenEstimator, history_size
from mind.context.environment import environment_summary
from mind.context.prompt import SUMMARISER_PROMPT
from mind.conversation.errors import CompactionFailed
from mind.conversation.history import ContextSummary, HistoryMessage
from mind.errors import WrongState
from mind.events.views import CompactionTrigger, CompactionView
from mind.providers.base import (
    ErrorKind,
    Provider,
    ProviderMessage,
    ProviderRequest,
    StreamEvent,
    ThinkingLevel,
)
from mind.store.database import Database
from mind.usage import attribution as usage
from tobe.config import ContextSettings

log = logging.getLogger(__name__)

# Attempts when the conversation's context changed under a compaction (compare-and-set).
_ATTEMPTS = 3
# Splits of a chunk the provider still found too long, before giving up.
_SPLITS = 6
# A requested compaction keeps at most this many recent batches verbatim.
_REQUESTED_KEEP = 2
# Tokens for the framing of the summariser's input ("Earlier summary:", ...).
_FRAMING_TOKENS = 64


@dataclass(frozen=True)
class Compacted:
    """A committed compaction: the new summary, the messages after it, and its event."""

    summary: ContextSummary
    messages: list[HistoryMessage]
    view: CompactionView


@dataclass(frozen=True)
class _Plan:
    prefix: list[HistoryMessage]
    tail: list[HistoryMessage]


def _ignore(event: StreamEvent) -> None:
    """Summaries are not streamed to anyone."""


class CompactionEngine:
    def __init__(
        self,
        database: Database,
        provider: Provider,
        budget: Budget,
        estimator: TokenEstimator,
        settings: ContextSettings,
    ) -> None:
        self.database = database
        self.provider = provider
        self.budget = budget
        self.estimator = estimator
        self.settings = settings
        self._fit_summary()
        # The generation of the latest summary this process committed, per conversation: an
        # actor re-reads its summary only when it moved (only this process writes them).
        self.committed: dict[str, int] = {}

    def _fit_summary(self) -> None:
        # A small window cannot give a quarter of itself to a summary.
        window = self.budget.context_window
        self.summary_tokens = min(self.settings.summary_tokens, max(64, window // 8))

    def narrow(self, window: int) -> bool:
        """The server said the model's window is `window`: budget every later request for it
        when it is smaller than the one believed. Whether it was."""
        if window >= self.budget.context_window:
            return False
        log.warning(
            "the model's server says its context window is %d tokens, not the %d believed; "
            "every request now keeps within %d. Give the real window in [[provider.models]] "
            "context_window (or serve the model with a larger one)",
            window,
            self.budget.context_window,
            window,
        )
        self.budget = self.budget.narrowed(window)
        self._fit_summary()
        return True

    async def compact(
        self,
        key: str,
        audience: list[str],
        *,
        trigger: CompactionTrigger,
        run_id: str = "",
        fixed_tokens: int = 0,
        protected: frozenset[str] = frozenset(),
    ) -> Compacted:
        """Summarise what the plan leaves out; see the module docstring.

        Raises `WrongState` when there is nothing before the messages that must stay, and
        `CompactionFailed` when summarising failed; either way nothing changed.
        """
        for _ in range(_ATTEMPTS):
            stored = await records.load(self.database, key)
            plan = self._plan(key, stored.messages, trigger, protected)
            tokens_before = fixed_tokens + self._tokens(key, stored.summary, stored.messages)
            text, calls = await self._summarise(key, stored.summary, plan.prefix)
            environment = await self.database.read(
                lambda session: environment_summary(session, key)
            )
            summary = ContextSummary(
                generation=stored.generation + 1,
                version=records.SUMMARY_VERSION,
                through_message_id=plan.prefix[-1].id,
                text=text,
                environment=environment,
                created_at=datetime.now(UTC),
            )
            view = CompactionView(
                generation=summary.generation,
                through_message_id=summary.through_message_id,
                messages_summarised=len(plan.prefix),
                tokens_before=tokens_before,
                tokens_after=fixed_tokens + self._tokens(key, summary, plan.tail),
                trigger=trigger,
                summary_calls=calls,
                run_id=run_id,
            )
            commit = partial(
                records.commit_summary,
                key=key,
                audience=audience,
                base=stored.summary,
                summary=summary,
                view=view,
            )
            try:
                await self.database.write(commit)
            except records.SummaryConflict as conflict:
                log.info("compaction of %s starts again: %s", key, conflict)
                continue
            self.committed[key] = summary.generation
            return Compacted(summary, plan.tail, view)
        raise CompactionFailed(
            f"the context of {key} kept changing while it was being compacted; try again"
        )

    def _tokens(
        self, key: str, summary: ContextSummary | None, messages: Sequence[HistoryMessage]
    ) -> int:
        size = Size(0)
        if summary is not None:
            size = Size(len(summary.text) + len(summary.environment) + 200)
        for message in messages:
            size = size + history_size(message)
        return self.estimator.tokens(key, size)

    def _plan(
        self,
        key: str,
        history: list[HistoryMessage],
        trigger: CompactionTrigger,
        protected: frozenset[str],
    ) -> _Plan:
        found = transcript.batches(history)
        keep_tokens = int(self.settings.keep_ratio * self.budget.prompt_limit)
        most = _REQUESTED_KEEP if trigger is CompactionTrigger.REQUESTED else len(found)
        first_kept, kept_tokens = len(found), 0
        for index in range(len(found) - 1, -1, -1):
            batch = found[index]
            tokens = self.estimator.tokens(key, _batch_size(history, batch))
            if first_kept < len(found) and (
                kept_tokens + tokens > keep_tokens or len(found) - index > most
            ):
                break
            first_kept, kept_tokens = index, kept_tokens + tokens
        for index, batch in enumerate(found):
            if batch.call_ids & protected:
                first_kept = min(first_kept, index)
                break
        cut = found[first_kept].start if first_kept < len(found) else len(history)
        if cut == 0:
            raise WrongState(
                f"{key} is as short as compaction can make it: only its most recent messages "
                "are left after its summary, and they stay as they are"
            )
        return _Plan(history[:cut], history[cut:])

    async def _summarise(
        self, key: str, previous: ContextSummary | None, prefix: list[HistoryMessage]
    ) -> tuple[str, int]:
        """The new summary text and how many provider calls it took."""
        chunk_tokens = self._chunk_tokens(key)
        item_chars = max(200, int(chunk_tokens * self.estimator.ratio(key)) // 2)
        items = [transcript.render(message, item_chars) for message in prefix]
        text = previous.text if previous else ""
        calls = 0
        chunks = self._chunks(key, items, chunk_tokens)
        log.info(
            "compacting %s: summarising %d messages in %d chunks", key, len(items), len(chunks)
        )
        for chunk in chunks:
            text, used = await self._fold(text, chunk, _SPLITS)
            calls += used
        return text, calls

    def _chunk_tokens(self, key: str) -> int:
        """Tokens of messages one summarising call may carry beside the earlier summary."""
        window = self.budget.context_window - self.summary_tokens - self.budget.reserve_tokens
        system = self.estimator.tokens(key, Size(len(SUMMARISER_PROMPT)))
        return max(64, window - system - self.summary_tokens - _FRAMING_TOKENS)

    def _chunks(self, key: str, items: list[str], chunk_tokens: int) -> list[list[str]]:
        chunks: list[list[str]] = [[]]
        used = 0
        for item in items:
            tokens = self.estimator.tokens(key, Size(len(item) + 1))
            if chunks[-1] and used + tokens > chunk_tokens:
                chunks.append([])
                used = 0
            chunks[-1].append(item)
            used += tokens
        return [chunk for chunk in chunks if chunk]

    async def _fold(self, previous: str, chunk: list[str], splits: int) -> tuple[str, int]:
        """`previous` with `chunk` folded in; a chunk found too long is halved and folded in
        piece by piece (a single item is cut to half its length)."""
        request = ProviderRequest(
            system=SUMMARISER_PROMPT.format(words=max(50, self.summary_tokens * 3 // 4)),
            messages=[ProviderMessage(role="user", text=_summariser_input(previous, chunk))],
            thinking=ThinkingLevel.OFF,
            max_output_tokens=self.summary_tokens,
        )
        with usage.purpose(usage.COMPACTION):
            result = await self.provider.complete(request, _ignore)
        error = result.error
        if error is not None and error.kind is ErrorKind.CONTEXT_OVERFLOW and splits > 0:
            if len(chunk) == 1:
                return await self._fold(previous, [chunk[0][: len(chunk[0]) // 2]], splits - 1)
            half = len(chunk) // 2
            text, first = await self._fold(previous, chunk[:half], splits - 1)
            text, second = await self._fold(text, chunk[half:], splits - 1)
            return text, 1 + first + second
        if error is not None:
            raise CompactionFailed(
                f"summarising failed: provider error ({error.kind.value}): {error.message}"
            )
        if not result.text.strip():
            raise CompactionFailed("summarising failed: the model answered with no summary")
        return result.text.strip(), 1


def _batch_size(history: list[HistoryMessage], batch: transcript.Batch) -> Size:
    size = Size(0)
    for message in history[batch.start : batch.end]:
        size = size + history_size(message)
    return size


def _summariser_input(previous: str, chunk: list[str]) -> str:
    parts = [f"Earlier summary:\n{previous}"] if previous else []
    parts.append("Messages to fold into the summary:\n" + "\n".join(chunk))
    return "\n\n".join(parts)
