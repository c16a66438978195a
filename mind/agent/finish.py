"""Run finish: record a run's end in one unit of work, then hand the lease on.

The unit ends the run (its state, usage and steps), answers a failure with the error reply
(never a cancel, a stop, or a proactive run nobody asked for), and ends a firing's run the
firing's way (`mind.agent.proactive`): posts its message or tells it failed, or queues its
retry after a stop. A sealed run whose key the end shreds is rendered as its replacement from
then on, in memory too.
"""

from __future__ import annotations

import logging

from mind.agent import proactive
from mind.agent.actor_state import RUN_HOLDER, ActiveRun, ActorState
from mind.cluster.errors import LeaseLost
from mind.conversation import continuation, posts, runs
from mind.core.loop import RunOutcome
from mind.core.view import ProviderView
from mind.events.action_views import FiringOutcome
from mind.events.views import RunState
from mind.scheduler import records as schedule_records
from mind.sealing.forms import redacted_history
from mind.sealing.keyring import Queried, replacement
from mind.store.write_tx import WriteTx

log = logging.getLogger(__name__)


class RunFinish(ActorState):
    """Records a run's end; see the module docstring."""

    async def _finish(
        self, active: ActiveRun, state: RunState, reason: str, outcome: RunOutcome | None
    ) -> None:
        usage = None
        if outcome is not None:
            usage = {
                "input_tokens": outcome.usage.input_tokens,
                "output_tokens": outcome.usage.output_tokens,
                "cached_tokens": outcome.usage.cached_tokens,
            }
        run_id, steps = active.run_id, outcome.steps if outcome else None
        # Only a failure is answered: a cancel or a stop was someone's choice; and never a
        # proactive run's, which nobody asked for.
        own = self._profile.error_reply if self._profile is not None else ""
        answered = state is RunState.FAILED and active.proactive is None
        error_reply = (own or self.replies.error_reply(self.key)) if answered else ""
        firing = active.proactive

        def unit(tx: WriteTx) -> list[dict[str, str]] | None:
            # A stop leaves calls waiting for an approval open, as a crash would; the next
            # start continues them once decided.
            interrupted = state is RunState.INTERRUPTED
            keep_open = continuation.open_call_ids(tx.session, run_id) if interrupted else ()
            ended = runs.finish(
                tx,
                run_id,
                state=state,
                reason=reason,
                audience=self.audience,
                steps=steps,
                usage=usage,
                keep_open=keep_open,
            )
            if ended is not None and error_reply:
                posts.append(
                    tx, self.audience, key=self.key, text=error_reply, posted_by=posts.ERROR_REPLY
                )
            if ended is not None and firing is not None:
                if interrupted:
                    # A stop: the firing runs again after the restart, as after a crash.
                    proactive.retry_interrupted(tx, run_id, reason, self.audience)
                elif schedule_records.firing_open(tx, firing.firing_id):
                    outcome, detail = firing.outcome(state, reason)
                    if outcome is FiringOutcome.SENT:
                        firing.post(tx, self.audience, self.key)
                    elif outcome is FiringOutcome.FAILED:
                        firing.tell_failed(tx, self.audience, self.key, detail)
                    schedule_records.end_firing(tx, firing.firing_id, outcome, detail)
            return ended.redaction if ended is not None else None

        try:
            redaction = await self.database.write(unit)
            if redaction and self.keyring is not None:
                self._shredded(run_id, [Queried.from_json(item) for item in redaction])
        except LeaseLost:
            # Its new owner ends the run as interrupted when it takes the conversation over.
            log.info(
                "run %s of %s: its end is left to the conversation's new owner", run_id, self.key
            )
        finally:
            async with self._lock:
                self._run = None
                self.lease.release(RUN_HOLDER)
                active.done.set()
                await self._start_next()

    def _shredded(self, run_id: str, redaction: list[Queried]) -> None:
        """A sealed run's key is gone: readers render its replacement from now on, and so
        does the transcript kept in memory (which held the run's raw values); the provider
        view renders it again (reading it from the store again would cost every sensitive
        turn the whole conversation)."""
        assert self.keyring is not None
        self.keyring.shred(run_id, redaction)
        text = replacement(redaction)
        self._transcript = [
            redacted_history(message, text) if message.run_id == run_id else message
            for message in self._transcript
        ]
        self._view = ProviderView()
