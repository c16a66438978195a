"""One actor per conversation: accepts messages, runs them one run at a time, cancels.

The actor's state lock serialises decisions (start a run now, or queue; which input runs
next); the mutation lease serialises mutations of the conversation: runs, and compactions
(a run compacts within itself; a requested compaction takes the lease between runs, before
the next queued input). Queued inputs live in the store, so a restart picks them up again in
order. Posts (`mind.conversation.posts`) join the same queue: appended at once when nothing
holds the lease and nothing waits, else delivered in their turn after the active run ended,
each as its message, without a run; the queue then goes on.

The actor is composed of its three parts over one state (`mind.agent.actor_state`): queue
and submit (`mind.agent.intake`), run execution (`mind.agent.execution`: the context, the
entry decision layer, the agent loop) and run finish (`mind.agent.finish`).

The actor keeps the conversation's profile, made once (`ProfileBook.resolve`) and again only
after the profile changed (`set_profile`), and its active Hand, which the Hand tool source
reads on every step: a run's steps read neither from the store. Each making of the profile
opens a scope for its code (`mind.agent.platform`); cancelling or stopping a run closes it
(`close_scope`), and the next run makes the profile again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mind.agent.actor_state import CANCELLED_BY_USER, ChatInput, SendResult
from mind.agent.execution import RunExecution
from mind.agent.finish import RunFinish
from mind.agent.intake import Intake
from mind.errors import WrongState
from mind.events.views import CompactionView, RunState
from mind.profiles import scope


class ConversationActor(Intake, RunExecution, RunFinish):
    """The entry points of one conversation's actor.

    Those that may start a run are shielded from their caller's cancellation: a unit commits
    even when its caller is gone, and a run whose start is committed must be launched too (a
    retried send then gets the same answer, as a duplicate).
    """

    async def submit(self, chat: ChatInput) -> SendResult:
        """Accept a user message: start a run with it, or queue it. Idempotent per key.

        One unit of work: the idempotency check, the decision and the new rows commit
        together, before the caller is answered. The actor's state it decides on is read
        before, under the state lock, which keeps it unchanged until the unit is committed.
        """
        return await asyncio.shield(self._submit(chat))

    async def post(
        self,
        text: str,
        idempotency_key: str,
        posted_by: str,
        widget: dict[str, Any] | None = None,
    ) -> SendResult:
        """Append a message written by code (a widget message with its card), now or after
        the active run; see the module docstring. Idempotent per key (shared with `submit`);
        one unit of work, like it."""
        return await asyncio.shield(self._post(text, idempotency_key, posted_by, widget))

    async def drain(self) -> None:
        """Start the next queued input's run when idle (after a restart or a lease release)."""
        await asyncio.shield(self._drain())

    async def continue_call(self, tool_call_id: str) -> None:
        """Continue an interrupted run whose open call can continue (now, or after the active
        run); see `mind.conversation.continuation`."""
        await asyncio.shield(self._continue_call(tool_call_id))

    async def cancel(self, reason: str = CANCELLED_BY_USER) -> str:
        async with self._lock:
            run = self._run
            if run is None or run.task is None:
                raise WrongState(f"conversation {self.key} has no active run to cancel")
            run.stop_as = (RunState.CANCELLED, reason)
            self.close_scope(scope.CANCELLED)
            run.task.cancel()
        await run.done.wait()
        return run.run_id

    async def stop(self, reason: str) -> None:
        """Refuse new messages, end the active run as interrupted, and wait for it."""
        async with self._lock:
            self._closing = True
            self.close_scope(scope.STOPPED)
            run = self._run
            if run is None or run.task is None:
                return
            run.stop_as = (RunState.INTERRUPTED, reason)
            run.task.cancel()
        await run.done.wait()

    async def compact(self) -> CompactionView:
        """Compact the context now (after the active run, if any; before the next queued
        input). Raises `WrongState` when there is nothing to compact and `CompactionFailed`
        when summarising failed (nothing changed either way), `ShuttingDown` when stopping."""
        return await (await self._request_compaction())
