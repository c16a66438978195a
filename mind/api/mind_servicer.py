"""The `tobe.v1.Mind` servicer: checks the caller, converts, delegates to the manager."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from mind.actions.model import PendingChoice
from mind.agent.manager import ConversationManager
from mind.api.events import durable_event, ephemeral_event
from mind.api.scope_check import require_scopes
from mind.approvals.wiring import Approvals
from mind.conversation.access import Viewer
from mind.conversation.images import ImageUpload
from mind.conversation.quotes import ForwardUpload
from mind.credentials import Identity
from mind.credentials.interceptor import current_identity
from mind.credentials.revocation_reports import RevocationReports
from mind.errors import InvalidInput, Unauthenticated
from mind.events.bus import EphemeralEvent, EventBus
from mind.events.payloads import approval_view
from mind.events.subscription import ReplayDone, subscribe
from mind.management.pairing import Pairing
from mind.status_codes import STATUS_CODES
from mind.store.database import Database
from mind.tools.authorizer import Decision
from mind.wire.convert import (
    approval_to_proto,
    compaction_to_proto,
    conversation_to_proto,
    detail_mode,
    memory_entry_to_proto,
    message_to_proto,
    pairing_to_proto,
    queued_to_proto,
    run_to_proto,
    tool_to_proto,
)
from mind.wire.convert_actions import (
    pending_action_to_proto,
    schedule_change,
    scheduled_action_to_proto,
)
from mind.wire.convert_children import child_to_proto
from mind.wire.convert_usage import usage_totals_to_proto
from mind.wire.convert_widgets import opened_widget_to_proto
from tobe.mind_answers import CLIENT_CREDENTIAL_REFUSED
from tobe.runtime.status import status_codes
from tobe.v1 import common_pb2, mind_pb2, mind_pb2_grpc

Context = grpc.aio.ServicerContext[Any, Any]

_ACTION_DECISIONS = {
    common_pb2.ACTION_DECISION_CONFIRM: PendingChoice.CONFIRM,
    common_pb2.ACTION_DECISION_CANCEL: PendingChoice.CANCEL,
    common_pb2.ACTION_DECISION_AMEND: PendingChoice.AMEND,
}
_DECISIONS = {
    common_pb2.APPROVAL_DECISION_APPROVE_ONCE: Decision.APPROVE_ONCE,
    common_pb2.APPROVAL_DECISION_APPROVE_CONVERSATION: Decision.APPROVE_CONVERSATION,
    common_pb2.APPROVAL_DECISION_DENY: Decision.DENY,
}

# Authenticates a client token presented to a gateway; None when it is not valid.
ClientAuthenticator = Callable[[str], Awaitable[Identity | None]]


def _viewer(on_behalf_of: mind_pb2.OnBehalfOf) -> Viewer:
    """The principal a call acts for; `require_scopes` checked the call's scopes."""
    return Viewer(on_behalf_of.principal, tuple(on_behalf_of.scopes))


@status_codes(STATUS_CODES)
@require_scopes(mind_pb2.DESCRIPTOR.services_by_name["Mind"].full_name)
class MindServicer(mind_pb2_grpc.MindServicer):
    def __init__(
        self,
        manager: ConversationManager,
        database: Database,
        bus: EventBus,
        authenticate_client: ClientAuthenticator,
        *,
        approvals: Approvals,
        pairing: Pairing,
        revocation_reports: RevocationReports,
    ) -> None:
        self.revocation_reports = revocation_reports
        self.approvals = approvals
        self.pairing = pairing
        self.manager = manager
        self.database = database
        self.bus = bus
        self.authenticate_client = authenticate_client

    async def Authenticate(
        self, request: mind_pb2.AuthenticateRequest, context: Context
    ) -> mind_pb2.AuthenticateResponse:
        identity = await self.authenticate_client(request.token) if request.token else None
        if identity is None or identity.kind != "client":
            raise Unauthenticated(CLIENT_CREDENTIAL_REFUSED)
        return mind_pb2.AuthenticateResponse(
            identity=mind_pb2.OnBehalfOf(
                principal=identity.principal,
                scopes=list(identity.scopes),
                credential_id=identity.credential_id,
            )
        )

    async def CreateConversation(
        self, request: mind_pb2.CreateConversationRequest, context: Context
    ) -> mind_pb2.CreateConversationResponse:
        view = await self.manager.conversations.create(
            _viewer(request.on_behalf_of),
            request.key,
            request.title,
            list(request.members),
            request.profile,
        )
        return mind_pb2.CreateConversationResponse(conversation=conversation_to_proto(view))

    async def ListProfiles(
        self, request: mind_pb2.ListProfilesRequest, context: Context
    ) -> mind_pb2.ListProfilesResponse:
        _viewer(request.on_behalf_of)
        return mind_pb2.ListProfilesResponse(
            profiles=[
                common_pb2.ProfileInfo(
                    name=p.name,
                    description=p.description,
                    platform_tools=list(p.platform_tools),
                    is_default=p.is_default,
                )
                for p in self.manager.conversations.list_profiles()
            ]
        )

    async def SetConversationProfile(
        self, request: mind_pb2.SetConversationProfileRequest, context: Context
    ) -> mind_pb2.SetConversationProfileResponse:
        viewer = _viewer(request.on_behalf_of)
        view = await self.manager.conversations.set_profile(
            viewer, request.conversation_key, request.profile
        )
        return mind_pb2.SetConversationProfileResponse(conversation=conversation_to_proto(view))

    async def SetActiveHand(
        self, request: mind_pb2.SetActiveHandRequest, context: Context
    ) -> mind_pb2.SetActiveHandResponse:
        viewer = _viewer(request.on_behalf_of)
        view = await self.manager.conversations.set_active_hand(
            viewer, request.conversation_key, request.hand
        )
        return mind_pb2.SetActiveHandResponse(conversation=conversation_to_proto(view))

    async def ListConversations(
        self, request: mind_pb2.ListConversationsRequest, context: Context
    ) -> mind_pb2.ListConversationsResponse:
        views = await self.manager.conversations.list(
            _viewer(request.on_behalf_of), request.limit, request.kinds, request.include_archived
        )
        return mind_pb2.ListConversationsResponse(
            conversations=[conversation_to_proto(v) for v in views]
        )

    async def RenameConversation(
        self, request: mind_pb2.RenameConversationRequest, context: Context
    ) -> mind_pb2.RenameConversationResponse:
        view = await self.manager.conversations.rename(
            _viewer(request.on_behalf_of), request.conversation_key, request.title
        )
        return mind_pb2.RenameConversationResponse(conversation=conversation_to_proto(view))

    async def ArchiveConversation(
        self, request: mind_pb2.ArchiveConversationRequest, context: Context
    ) -> mind_pb2.ArchiveConversationResponse:
        view = await self.manager.conversations.set_archived(
            _viewer(request.on_behalf_of), request.conversation_key, request.archived
        )
        return mind_pb2.ArchiveConversationResponse(conversation=conversation_to_proto(view))

    async def BranchConversation(
        self, request: mind_pb2.BranchConversationRequest, context: Context
    ) -> mind_pb2.BranchConversationResponse:
        view, copied = await self.manager.conversations.branch(
            _viewer(request.on_behalf_of),
            request.conversation_key,
            request.message_id,
            request.key,
            request.title,
        )
        return mind_pb2.BranchConversationResponse(
            conversation=conversation_to_proto(view), messages_copied=copied
        )

    async def SearchConversations(
        self, request: mind_pb2.SearchConversationsRequest, context: Context
    ) -> mind_pb2.SearchConversationsResponse:
        matches = await self.manager.conversations.search(
            _viewer(request.on_behalf_of), request.query, request.limit
        )
        return mind_pb2.SearchConversationsResponse(
            matches=[
                mind_pb2.ConversationMatch(
                    conversation=conversation_to_proto(match.conversation),
                    in_title=match.in_title,
                    message_id=match.message_id,
                    snippet=match.snippet,
                )
                for match in matches
            ]
        )

    async def SendChat(
        self, request: mind_pb2.SendChatRequest, context: Context
    ) -> mind_pb2.SendChatResponse:
        result = await self.manager.messages.send(
            _viewer(request.on_behalf_of),
            request.conversation_key,
            request.text,
            request.idempotency_key,
            request.steer,
            detail_mode(request.detail_mode),
            [ImageUpload(image.media_type, image.data) for image in request.images],
            reply_to=request.reply_to,
            forwarded=[forward_from_proto(item) for item in request.forwarded],
        )
        return mind_pb2.SendChatResponse(
            message_id=result.message_id,
            run_id=result.run_id,
            queued=result.queued,
            duplicate=result.duplicate,
            input_id=result.input_id,
        )

    async def PostMessage(
        self, request: mind_pb2.PostMessageRequest, context: Context
    ) -> mind_pb2.PostMessageResponse:
        viewer = _viewer(request.on_behalf_of)
        result = await self.manager.messages.post_as(
            viewer, request.conversation_key, request.text, request.idempotency_key
        )
        return mind_pb2.PostMessageResponse(
            message_id=result.message_id,
            queued=result.queued,
            duplicate=result.duplicate,
            input_id=result.input_id,
        )

    async def CancelRun(
        self, request: mind_pb2.CancelRunRequest, context: Context
    ) -> mind_pb2.CancelRunResponse:
        run_id = await self.manager.runs.cancel(
            _viewer(request.on_behalf_of), request.conversation_key
        )
        return mind_pb2.CancelRunResponse(run_id=run_id)

    async def CompactConversation(
        self, request: mind_pb2.CompactConversationRequest, context: Context
    ) -> mind_pb2.CompactConversationResponse:
        viewer = _viewer(request.on_behalf_of)
        if not request.conversation_key:
            raise InvalidInput("conversation_key is required: name the conversation to compact")
        view = await self.manager.runs.compact(viewer, request.conversation_key)
        return mind_pb2.CompactConversationResponse(compaction=compaction_to_proto(view))

    async def ListMemory(
        self, request: mind_pb2.ListMemoryRequest, context: Context
    ) -> mind_pb2.ListMemoryResponse:
        found = await self.manager.memory.list(
            _viewer(request.on_behalf_of), request.conversation_key
        )
        return mind_pb2.ListMemoryResponse(
            entries=[memory_entry_to_proto(entry) for entry in found.entries],
            total_bytes=found.total_bytes,
        )

    async def GetConversationUsage(
        self, request: mind_pb2.GetConversationUsageRequest, context: Context
    ) -> mind_pb2.GetConversationUsageResponse:
        report = await self.manager.usage.of(
            _viewer(request.on_behalf_of), request.conversation_key
        )
        return mind_pb2.GetConversationUsageResponse(
            by_purpose=[usage_totals_to_proto(totals) for totals in report.groups],
            total=usage_totals_to_proto(report.total),
            currency=report.currency,
        )

    async def GetImage(
        self, request: mind_pb2.GetImageRequest, context: Context
    ) -> mind_pb2.GetImageResponse:
        media_type, data = await self.manager.images.read(
            _viewer(request.on_behalf_of), request.conversation_key, request.digest
        )
        return mind_pb2.GetImageResponse(media_type=media_type, data=data)

    async def GetWidget(
        self, request: mind_pb2.GetWidgetRequest, context: Context
    ) -> mind_pb2.GetWidgetResponse:
        opened = await self.manager.widgets.open(
            _viewer(request.on_behalf_of), request.conversation_key, request.widget_id
        )
        return opened_widget_to_proto(opened)

    async def DeleteMemory(
        self, request: mind_pb2.DeleteMemoryRequest, context: Context
    ) -> mind_pb2.DeleteMemoryResponse:
        existed = await self.manager.memory.delete(
            _viewer(request.on_behalf_of), request.conversation_key, request.key
        )
        return mind_pb2.DeleteMemoryResponse(existed=existed)

    async def ChangeSchedule(
        self, request: mind_pb2.ChangeScheduleRequest, context: Context
    ) -> mind_pb2.ChangeScheduleResponse:
        scheduled = await self.manager.actions.change_schedule(
            _viewer(request.on_behalf_of), request.schedule_id, schedule_change(request.change)
        )
        return mind_pb2.ChangeScheduleResponse(scheduled=scheduled_action_to_proto(scheduled))

    async def ListActions(
        self, request: mind_pb2.ListActionsRequest, context: Context
    ) -> mind_pb2.ListActionsResponse:
        pending, scheduled = await self.manager.actions.list(
            _viewer(request.on_behalf_of), request.conversation_key, request.include_ended
        )
        return mind_pb2.ListActionsResponse(
            pending=[pending_action_to_proto(a) for a in pending],
            scheduled=[scheduled_action_to_proto(a) for a in scheduled],
        )

    async def DecideAction(
        self, request: mind_pb2.DecideActionRequest, context: Context
    ) -> mind_pb2.DecideActionResponse:
        viewer = _viewer(request.on_behalf_of)
        choice = _ACTION_DECISIONS.get(request.decision)
        if choice is None:
            raise InvalidInput(
                "decision must be CONFIRM, CANCEL or AMEND "
                f"(got {common_pb2.ActionDecision.Name(request.decision)})"
            )
        result = await self.manager.actions.decide(
            viewer, request.action_id, choice, request.amendment, request.idempotency_key
        )
        scheduled = result.scheduled
        return mind_pb2.DecideActionResponse(
            action=pending_action_to_proto(result.action),
            run_id=result.run_id,
            scheduled=scheduled_action_to_proto(scheduled) if scheduled is not None else None,
        )

    async def GetSnapshot(
        self, request: mind_pb2.GetSnapshotRequest, context: Context
    ) -> mind_pb2.GetSnapshotResponse:
        snapshot = await self.manager.messages.snapshot(
            _viewer(request.on_behalf_of),
            request.conversation_key,
            request.message_limit,
            detail_mode(request.detail_mode),
        )
        active_run = snapshot.active_run
        return mind_pb2.GetSnapshotResponse(
            conversation=conversation_to_proto(snapshot.conversation),
            messages=[message_to_proto(m) for m in snapshot.messages],
            tools=[tool_to_proto(t) for t in snapshot.tools],
            active_run=run_to_proto(active_run) if active_run is not None else None,
            pending_approvals=[approval_to_proto(a) for a in snapshot.pending_approvals],
            last_event_id=snapshot.last_event_id,
            queued=[queued_to_proto(q) for q in snapshot.queued],
            scheduled_actions=[scheduled_action_to_proto(a) for a in snapshot.scheduled_actions],
            pending_actions=[pending_action_to_proto(a) for a in snapshot.pending_actions],
            children=[child_to_proto(c) for c in snapshot.children],
        )

    async def GetHistory(
        self, request: mind_pb2.GetHistoryRequest, context: Context
    ) -> mind_pb2.GetHistoryResponse:
        page = await self.manager.messages.history(
            _viewer(request.on_behalf_of),
            request.conversation_key,
            request.after_message_id,
            request.limit,
            detail_mode(request.detail_mode),
        )
        return mind_pb2.GetHistoryResponse(
            messages=[message_to_proto(m) for m in page.messages],
            tools=[tool_to_proto(t) for t in page.tools],
            next_after_message_id=page.next_after_message_id,
            children=[child_to_proto(c) for c in page.children],
        )

    async def Subscribe(
        self, request: mind_pb2.SubscribeRequest, context: Context
    ) -> AsyncIterator[mind_pb2.SubscribeResponse]:
        items = subscribe(self.database, self.bus, request.after_id, request.include_ephemeral)
        with contextlib.ExitStack() as reporting:
            if request.reports_revocations:
                reporting.enter_context(
                    self.revocation_reports.gateway(current_identity().credential_id)
                )
            async for item in items:
                if isinstance(item, ReplayDone):
                    yield mind_pb2.SubscribeResponse(
                        replay_done=mind_pb2.ReplayDone(last_durable_id=item.last_durable_id)
                    )
                elif isinstance(item, EphemeralEvent):
                    yield mind_pb2.SubscribeResponse(event=ephemeral_event(item))
                else:
                    yield mind_pb2.SubscribeResponse(
                        event=durable_event(item, self.manager.keyring)
                    )

    async def DecideApproval(
        self, request: mind_pb2.DecideApprovalRequest, context: Context
    ) -> mind_pb2.DecideApprovalResponse:
        viewer = _viewer(request.on_behalf_of)
        decision = _DECISIONS.get(request.decision)
        if decision is None:
            raise InvalidInput(
                "decision must be APPROVE_ONCE, APPROVE_CONVERSATION or DENY "
                f"(got {common_pb2.ApprovalDecision.Name(request.decision)})"
            )
        record = await self.approvals.decide(
            request.approval_id,
            decision,
            principal=viewer.principal,
            reason=request.reason,
            admin=viewer.is_admin,
        )
        return mind_pb2.DecideApprovalResponse(approval=approval_to_proto(approval_view(record)))

    async def CreatePairingCode(
        self, request: mind_pb2.CreatePairingCodeRequest, context: Context
    ) -> mind_pb2.CreatePairingCodeResponse:
        viewer = _viewer(request.on_behalf_of)
        issued = await self.pairing.create(
            viewer.principal, request.ttl_seconds, actor=viewer.principal
        )
        return mind_pb2.CreatePairingCodeResponse(pairing=pairing_to_proto(issued))

    async def RedeemPairingCode(
        self, request: mind_pb2.RedeemPairingCodeRequest, context: Context
    ) -> mind_pb2.RedeemPairingCodeResponse:
        redeemed = await self.pairing.redeem(request.code, request.device, request.device_id)
        return mind_pb2.RedeemPairingCodeResponse(
            token=redeemed.token,
            credential_id=redeemed.credential_id,
            principal=redeemed.principal,
        )

    async def SignOut(
        self, request: mind_pb2.SignOutRequest, context: Context
    ) -> mind_pb2.SignOutResponse:
        signed_out = await self.pairing.sign_out(request.token)
        return mind_pb2.SignOutResponse(credential_id=signed_out.id)

    async def ReportRevocation(
        self, request: mind_pb2.ReportRevocationRequest, context: Context
    ) -> mind_pb2.ReportRevocationResponse:
        if request.closed < 0:
            raise InvalidInput(f"closed must be 0 or more, not {request.closed}")
        self.revocation_reports.report(request.credential_id, request.closed)
        return mind_pb2.ReportRevocationResponse()


def forward_from_proto(item: common_pb2.ForwardedItemUpload) -> ForwardUpload:
    return ForwardUpload(
        item.speaker,
        item.text,
        [ImageUpload(image.media_type, image.data) for image in item.images],
    )
