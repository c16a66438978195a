"""Helpers shared by the remote-execution tests (fixtures live in conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass

from mind.credentials import issue
from mind.credentials.live_calls import LiveCalls
from mind.remote.execution import RemoteExecution
from mind.remote.model import TaskRecord
from mind.store.database import Database
from mind.store.models import Credential
from mind.store.write_tx import WriteTx
from mind.tools.base import ApprovalBinding, DetailMode, Tool, ToolContext
from tobe.config import RemoteSettings

CONVERSATION = "p_remote"
OWNER = "alice"
# Hand credentials in these tests serve OWNER's conversations.
HAND_SCOPES = (f"serve:{OWNER}",)
AUDIENCES = {CONVERSATION: [OWNER]}


def audience_of(key: str) -> list[str]:
    return AUDIENCES.get(key, [])


@dataclass
class Link:
    """A real HandLink server on loopback over a real store, with credentials to dial it."""

    target: str
    token: str
    credential_id: str
    remote: RemoteExecution
    database: Database
    sink: list[TaskRecord]
    # The server's live streams by credential: `live_calls.revoke(id)` as a revocation does.
    live_calls: LiveCalls

    async def issue(
        self, kind: str = "hand", principal: str = "laptop", scopes: tuple[str, ...] | None = None
    ) -> tuple[str, str]:
        """A credential; Hands serve the owner of CONVERSATION unless `scopes` says otherwise."""
        granted = scopes if scopes is not None else HAND_SCOPES if kind == "hand" else ()

        def credential(tx: WriteTx) -> tuple[Credential, str]:
            return issue(tx.session, kind=kind, principal=principal, scopes=granted)

        issued, token = await self.database.write(credential)
        return issued.id, token

    def tool(self, name: str) -> Tool:
        tools = {t.name: t for t in self.remote.tools.tools_for(CONVERSATION)}
        return tools[name]


def remote_settings(**overrides: float) -> RemoteSettings:
    values = dict(
        accept_timeout=5.0,
        run_timeout=30.0,
        heartbeat_interval=0.2,
        heartbeat_timeout=3.0,
        lost_grace=0.5,
        cancel_wait=5.0,
    )
    values.update(overrides)
    return RemoteSettings(**values)


def tool_context(
    progress: list[tuple[str, float | None]] | None = None,
    *,
    call_id: str = "call_1",
    mode: DetailMode = DetailMode.TRANSPARENT,
    approval: ApprovalBinding | None = None,
) -> ToolContext:
    seen = progress if progress is not None else []
    return ToolContext(
        conversation_key=CONVERSATION,
        run_id="run_1",
        tool_call_id=call_id,
        principal="alice",
        detail_mode=mode,
        report_progress=lambda message, fraction: seen.append((message, fraction)),
        approval=approval,
    )
