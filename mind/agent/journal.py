"""The run journal: durable writes of one run, each one unit of work with its events."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, select, update

from mind.conversation import delegations, inputs
from mind.conversation.history import HistoryMessage
from mind.conversation.media import digests_of, read_images
from mind.conversation.messages import append_message
from mind.conversation.records import assistant_payload, history_message
from mind.core.tool_runtime import Admission, Terminal
from mind.events.payloads import projection_view
from mind.providers.base import ProviderResult, ToolCall
from mind.sealing.forms import Overlay, Sealer
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode

_PROJECTION = select(models.ToolProjection.__table__).where(
    models.ToolProjection.tool_call_id == bindparam("tool_call_id")
)
_END_CALL = (
    update(models.ToolProjection)
    .where(
        models.ToolProjection.tool_call_id == bindparam("tool_call_id"),
        models.ToolProjection.status == "running",
    )
    .values(
        status=bindparam("status"),
        result_summary=bindparam("result_summary"),
        result_projection=bindparam("result_projection"),
        finished_at=bindparam("finished_at"),
    )
)


class RunRecorder:
    """Implements `mind.core.loop.RunJournal` for one run of one conversation.

    A sealed run's recorder has its `sealer`: what it writes that may carry raw values is
    stored sealed, and what it returns (to the run's own history) is plain."""

    def __init__(
        self,
        database: Database,
        *,
        conversation_key: str,
        run_id: str,
        mode: str,
        audience: list[str],
        steer_waiting: Callable[[], bool],
        on_steers_taken: Callable[[], None],
        sealer: Sealer | None = None,
    ) -> None:
        self.database = database
        self.sealer = sealer
        self.key = conversation_key
        self.run_id = run_id
        self.mode = mode
        self.audience = audience
        self._steer_waiting = steer_waiting
        self._on_steers_taken = on_steers_taken

    async def record_assistant(
        self, step: int, result: ProviderResult, calls: list[ToolCall]
    ) -> HistoryMessage:
        def unit(tx: WriteTx) -> HistoryMessage:
            row = append_message(
                tx,
                self.audience,
                key=self.key,
                run_id=self.run_id,
                role="assistant",
                text=result.text,
                payload=assistant_payload(result, calls, self.mode, step),
                mode=DetailMode(self.mode),
                sealer=self.sealer,
            )
            usage = result.usage
            delegations.count_step(tx, self.key, usage.input_tokens + usage.output_tokens)
            return history_message(row)

        return await self.database.write(unit)

    async def admit(self, admission: Admission) -> None:
        await self.database.write(lambda tx: self._admit(tx, admission))

    async def finish(self, terminal: Terminal) -> HistoryMessage:
        return await self.database.write(lambda tx: self._finish(tx, terminal))

    async def skip(self, admission: Admission, terminal: Terminal) -> HistoryMessage:
        def unit(tx: WriteTx) -> HistoryMessage:
            self._admit(tx, admission)
            return self._finish(tx, terminal)

        return await self.database.write(unit)

    def steer_waiting(self) -> bool:
        return self._steer_waiting()

    async def take_steers(self) -> list[HistoryMessage]:
        if not self._steer_waiting():
            return []

        def unit(tx: WriteTx) -> list[HistoryMessage]:
            rows = inputs.queued(tx, self.key, steer_only=True)
            delivered = [inputs.deliver(tx, row, self.run_id, self.audience) for row in rows]
            images = read_images(tx.session, digests_of(m.payload for m in delivered))
            return [history_message(m, images) for m in delivered]

        steers = await self.database.write(unit)
        self._on_steers_taken()
        return steers

    def _event(self, tx: WriteTx, type: str, payload: dict[str, Any]) -> None:
        tx.event(type, self.key, self.audience, payload)

    def _admit(self, tx: WriteTx, admission: Admission) -> None:
        projection = admission.arguments_projection
        if self.sealer is not None:
            projection = self.sealer.projection(projection, "arguments_json")
        row = tx.insert(
            models.ToolProjection(
                tool_call_id=admission.tool_call_id,
                conversation_key=self.key,
                run_id=self.run_id,
                tool=admission.tool,
                hand_id=admission.hand_id,
                admitted_mode=admission.mode.value,
                arguments_summary=admission.arguments_summary,
                arguments_projection=projection,
                projection_version=admission.arguments_projection.get("version", 1),
                status="running",
                admitted_at=datetime.now(UTC),
            )
        )
        view = projection_view(row, admission.mode).to_payload()
        if self.sealer is not None and projection is not admission.arguments_projection:
            plain = Overlay(row, arguments_projection=admission.arguments_projection)
            view = self.sealer.event(view, projection_view(plain, admission.mode).to_payload())
        self._event(tx, "tool_changed", view)

    def _finish(self, tx: WriteTx, terminal: Terminal) -> HistoryMessage:
        row = tx.first(_PROJECTION, tool_call_id=terminal.tool_call_id)
        if row is None or row.status != "running":
            raise RuntimeError(f"tool call {terminal.tool_call_id} has no open admission")
        now = datetime.now(UTC)
        result = terminal.result_projection
        if self.sealer is not None:
            result = self.sealer.projection(result, "text")
        row = row._replace(
            status=terminal.status,
            result_summary=terminal.result_summary,
            result_projection=result,
            finished_at=now,
        )
        ended = tx.execute(
            _END_CALL,
            tool_call_id=row.tool_call_id,
            status=row.status,
            result_summary=row.result_summary,
            result_projection=row.result_projection,
            finished_at=now,
        )
        if not ended:  # its run was ended meanwhile (a stop): that terminal stands
            raise RuntimeError(f"tool call {terminal.tool_call_id} was ended meanwhile")
        mode = DetailMode(row.admitted_mode)
        view = projection_view(row, mode).to_payload()
        if self.sealer is not None:
            plain = Overlay(
                row,
                arguments_projection=self.sealer.reveal(row.arguments_projection or {}),
                result_projection=terminal.result_projection,
            )
            view = self.sealer.event(view, projection_view(plain, mode).to_payload())
        self._event(tx, "tool_changed", view)
        message = append_message(
            tx,
            self.audience,
            key=self.key,
            run_id=self.run_id,
            role="tool",
            text=terminal.model_text,
            payload={
                "tool_call_id": terminal.tool_call_id,
                "tool_name": terminal.tool,
                "is_error": terminal.is_error,
                "detail_mode": terminal.mode.value,
                "result_summary": terminal.result_summary,
                "status": terminal.status,
                # Stored with the result (a Hand's, by the Registry): refs only, never bytes.
                **({"images": list(terminal.images)} if terminal.images else {}),
            },
            mode=terminal.mode,
            at=now,
            sealer=self.sealer,
        )
        return history_message(message, read_images(tx.session, digests_of([message.payload])))
