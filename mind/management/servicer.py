"""gRPC face of the Management service: proto <-> domain, refusals -> status codes.

Served on the Mind's owner-only Unix socket (online) or on a private in-process socket by the
offline CLI; either way this servicer and `ManagementService` answer.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from mind.errors import InvalidInput
from mind.management import convert
from mind.management.service import ManagementService
from mind.status_codes import STATUS_CODES
from mind.wire.convert import (
    compaction_to_proto,
    conversation_to_proto,
    memory_entry_to_proto,
    pairing_to_proto,
)
from mind.wire.convert_actions import schedule_change, scheduled_action_to_proto
from mind.wire.convert_usage import grouping_from_proto, usage_totals_to_proto
from tobe.runtime.status import StatusTable, status_codes
from tobe.runtime.timestamps import optional_moment
from tobe.v1 import management_pb2 as pb
from tobe.v1 import management_pb2_grpc

log = logging.getLogger(__name__)

ACTOR_METADATA = "tobe-actor"
DEFAULT_ACTOR = "operator"
MAX_ACTOR_LENGTH = 128


def _store_failure(error: SQLAlchemyError) -> tuple[grpc.StatusCode, str]:
    """UNAVAILABLE when the store could not be reached, else INTERNAL; nothing was changed.

    The message names the driver's reason only: the full error text carries statement
    parameters.
    """
    reason = f"{type(error).__name__}: {getattr(error, 'orig', None) or error}"
    log.error("the store failed: %s", reason)
    unreachable = isinstance(error, OperationalError)
    code = grpc.StatusCode.UNAVAILABLE if unreachable else grpc.StatusCode.INTERNAL
    return code, f"the store failed ({reason}); nothing was changed"


# The Mind's refusals end as they do for its gateways; only Management also reports a failed
# store as such (the Mind service leaves it INTERNAL).
MANAGEMENT_STATUS_CODES: StatusTable = {**STATUS_CODES, SQLAlchemyError: _store_failure}


def actor_of(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The operator named by the caller's `tobe-actor` metadata, for audit rows."""
    for key, value in context.invocation_metadata() or ():
        if key == ACTOR_METADATA and isinstance(value, str) and value.strip():
            return value.strip()[:MAX_ACTOR_LENGTH]
    return DEFAULT_ACTOR


def _kind(kind: pb.CredentialKind.ValueType, *, required: bool) -> str:
    name = convert.kind_name(kind)
    if required and not name:
        raise InvalidInput("credential kind is required: client, hand or service")
    if not name and kind != pb.CREDENTIAL_KIND_UNSPECIFIED:
        raise InvalidInput(f"unknown credential kind {kind}")
    return name


def _required(value: str, what: str) -> str:
    if not value:
        raise InvalidInput(f"{what} is required")
    return value


@status_codes(MANAGEMENT_STATUS_CODES)
class ManagementServicer(management_pb2_grpc.ManagementServicer):
    def __init__(self, service: ManagementService) -> None:
        self._service = service

    async def CreateCredential(
        self,
        request: pb.CreateCredentialRequest,
        context: grpc.aio.ServicerContext[pb.CreateCredentialRequest, pb.CreateCredentialResponse],
    ) -> pb.CreateCredentialResponse:
        issued = await self._service.create_credential(
            kind=_kind(request.kind, required=True),
            principal=request.principal,
            scopes=list(request.scopes),
            expires_at=optional_moment(request, "expires_at"),
            label=request.label,
            actor=actor_of(context),
        )
        return pb.CreateCredentialResponse(
            credential=convert.credential(issued.credential), secret=issued.secret
        )

    async def ListCredentials(
        self,
        request: pb.ListCredentialsRequest,
        context: grpc.aio.ServicerContext[pb.ListCredentialsRequest, pb.ListCredentialsResponse],
    ) -> pb.ListCredentialsResponse:
        found = await self._service.list_credentials(
            include_revoked=request.include_revoked,
            principal=request.principal,
            kind=_kind(request.kind, required=False),
        )
        return pb.ListCredentialsResponse(credentials=[convert.credential(c) for c in found])

    async def IdentifyCredential(
        self,
        request: pb.IdentifyCredentialRequest,
        context: grpc.aio.ServicerContext[
            pb.IdentifyCredentialRequest, pb.IdentifyCredentialResponse
        ],
    ) -> pb.IdentifyCredentialResponse:
        info, matches = await self._service.identify_credential(request.token)
        return pb.IdentifyCredentialResponse(
            credential=convert.credential(info), secret_matches=matches
        )

    async def GetCredential(
        self,
        request: pb.GetCredentialRequest,
        context: grpc.aio.ServicerContext[pb.GetCredentialRequest, pb.GetCredentialResponse],
    ) -> pb.GetCredentialResponse:
        info = await self._service.get_credential(_required(request.id, "credential id"))
        return pb.GetCredentialResponse(credential=convert.credential(info))

    async def RevokeCredential(
        self,
        request: pb.RevokeCredentialRequest,
        context: grpc.aio.ServicerContext[pb.RevokeCredentialRequest, pb.RevokeCredentialResponse],
    ) -> pb.RevokeCredentialResponse:
        revocation = await self._service.revoke_credential(
            _required(request.id, "credential id"), actor=actor_of(context)
        )
        return pb.RevokeCredentialResponse(
            credential=convert.credential(revocation.credential),
            disconnected=revocation.disconnected,
            unreported_gateways=revocation.unreported_gateways,
        )

    async def RotateCredential(
        self,
        request: pb.RotateCredentialRequest,
        context: grpc.aio.ServicerContext[pb.RotateCredentialRequest, pb.RotateCredentialResponse],
    ) -> pb.RotateCredentialResponse:
        rotation = await self._service.rotate_credential(
            _required(request.id, "credential id"), actor=actor_of(context)
        )
        return pb.RotateCredentialResponse(
            credential=convert.credential(rotation.credential),
            secret=rotation.secret,
            revoked_id=rotation.revoked_id,
            disconnected=rotation.disconnected,
            unreported_gateways=rotation.unreported_gateways,
        )

    async def GetStatus(
        self,
        request: pb.GetStatusRequest,
        context: grpc.aio.ServicerContext[pb.GetStatusRequest, pb.GetStatusResponse],
    ) -> pb.GetStatusResponse:
        return convert.status(await self._service.status())

    async def ListAudit(
        self,
        request: pb.ListAuditRequest,
        context: grpc.aio.ServicerContext[pb.ListAuditRequest, pb.ListAuditResponse],
    ) -> pb.ListAuditResponse:
        records = await self._service.audit_entries(
            action=request.action,
            target=request.target,
            actor=request.actor,
            since=optional_moment(request, "since"),
            limit=request.limit,
        )
        return pb.ListAuditResponse(entries=[convert.audit_entry(r) for r in records])

    async def ListAllConversations(
        self,
        request: pb.ListAllConversationsRequest,
        context: grpc.aio.ServicerContext[
            pb.ListAllConversationsRequest, pb.ListAllConversationsResponse
        ],
    ) -> pb.ListAllConversationsResponse:
        found = await self._service.list_conversations(owner=request.owner, limit=request.limit)
        return pb.ListAllConversationsResponse(
            conversations=[conversation_to_proto(c) for c in found]
        )

    async def InspectConversation(
        self,
        request: pb.InspectConversationRequest,
        context: grpc.aio.ServicerContext[
            pb.InspectConversationRequest, pb.InspectConversationResponse
        ],
    ) -> pb.InspectConversationResponse:
        detail = await self._service.inspect_conversation(
            _required(request.key, "conversation key")
        )
        return pb.InspectConversationResponse(
            conversation=conversation_to_proto(detail.conversation),
            messages=detail.messages,
            runs=detail.runs,
            tool_calls=detail.tool_calls,
            approvals=detail.approvals,
        )

    async def DeleteConversation(
        self,
        request: pb.DeleteConversationRequest,
        context: grpc.aio.ServicerContext[
            pb.DeleteConversationRequest, pb.DeleteConversationResponse
        ],
    ) -> pb.DeleteConversationResponse:
        deletion = await self._service.delete_conversation(
            _required(request.key, "conversation key"), actor=actor_of(context)
        )
        return pb.DeleteConversationResponse(key=deletion.key, removed=deletion.removed)

    async def ListConversationMemory(
        self,
        request: pb.ListConversationMemoryRequest,
        context: grpc.aio.ServicerContext[
            pb.ListConversationMemoryRequest, pb.ListConversationMemoryResponse
        ],
    ) -> pb.ListConversationMemoryResponse:
        found = await self._service.list_memory(_required(request.key, "conversation key"))
        return pb.ListConversationMemoryResponse(
            entries=[memory_entry_to_proto(entry) for entry in found.entries],
            total_bytes=found.total_bytes,
        )

    async def DeleteConversationMemory(
        self,
        request: pb.DeleteConversationMemoryRequest,
        context: grpc.aio.ServicerContext[
            pb.DeleteConversationMemoryRequest, pb.DeleteConversationMemoryResponse
        ],
    ) -> pb.DeleteConversationMemoryResponse:
        existed = await self._service.delete_memory(
            _required(request.key, "conversation key"),
            request.memory_key,
            actor=actor_of(context),
        )
        return pb.DeleteConversationMemoryResponse(existed=existed)

    async def ListSchedules(
        self,
        request: pb.ListSchedulesRequest,
        context: grpc.aio.ServicerContext[pb.ListSchedulesRequest, pb.ListSchedulesResponse],
    ) -> pb.ListSchedulesResponse:
        found = await self._service.list_schedules(
            request.conversation_key or None, request.include_ended
        )
        return pb.ListSchedulesResponse(scheduled=[scheduled_action_to_proto(v) for v in found])

    async def ChangeScheduledAction(
        self,
        request: pb.ChangeScheduledActionRequest,
        context: grpc.aio.ServicerContext[
            pb.ChangeScheduledActionRequest, pb.ChangeScheduledActionResponse
        ],
    ) -> pb.ChangeScheduledActionResponse:
        scheduled = await self._service.change_schedule(
            _required(request.id, "scheduled action id"),
            schedule_change(request.change),
            actor=actor_of(context),
        )
        return pb.ChangeScheduledActionResponse(scheduled=scheduled_action_to_proto(scheduled))

    async def CompactContext(
        self,
        request: pb.CompactContextRequest,
        context: grpc.aio.ServicerContext[pb.CompactContextRequest, pb.CompactContextResponse],
    ) -> pb.CompactContextResponse:
        compaction = await self._service.compact_context(
            _required(request.key, "conversation key"), actor=actor_of(context)
        )
        return pb.CompactContextResponse(compaction=compaction_to_proto(compaction))

    async def ChangeConversationProfile(
        self,
        request: pb.ChangeConversationProfileRequest,
        context: grpc.aio.ServicerContext[
            pb.ChangeConversationProfileRequest, pb.ChangeConversationProfileResponse
        ],
    ) -> pb.ChangeConversationProfileResponse:
        view = await self._service.change_profile(
            _required(request.key, "conversation key"), request.profile, actor=actor_of(context)
        )
        return pb.ChangeConversationProfileResponse(conversation=conversation_to_proto(view))

    async def ListApprovals(
        self,
        request: pb.ListApprovalsRequest,
        context: grpc.aio.ServicerContext[pb.ListApprovalsRequest, pb.ListApprovalsResponse],
    ) -> pb.ListApprovalsResponse:
        found = await self._service.list_approvals(
            pending_only=request.pending_only,
            conversation_key=request.conversation_key,
            limit=request.limit,
        )
        return pb.ListApprovalsResponse(approvals=[convert.approval(a) for a in found])

    async def GetApproval(
        self,
        request: pb.GetApprovalRequest,
        context: grpc.aio.ServicerContext[pb.GetApprovalRequest, pb.GetApprovalResponse],
    ) -> pb.GetApprovalResponse:
        record = await self._service.get_approval(_required(request.id, "approval id"))
        return pb.GetApprovalResponse(approval=convert.approval(record))

    async def CreatePairingCode(
        self,
        request: pb.ManagementCreatePairingCodeRequest,
        context: grpc.aio.ServicerContext[
            pb.ManagementCreatePairingCodeRequest, pb.ManagementCreatePairingCodeResponse
        ],
    ) -> pb.ManagementCreatePairingCodeResponse:
        issued = await self._service.create_pairing_code(
            _required(request.principal, "principal"),
            request.ttl_seconds,
            actor=actor_of(context),
        )
        return pb.ManagementCreatePairingCodeResponse(pairing=pairing_to_proto(issued))

    async def GetUsage(
        self,
        request: pb.GetUsageRequest,
        context: grpc.aio.ServicerContext[pb.GetUsageRequest, pb.GetUsageResponse],
    ) -> pb.GetUsageResponse:
        report = await self._service.usage.report(
            grouping_from_proto(request.by), since=optional_moment(request, "since")
        )
        return pb.GetUsageResponse(
            groups=[usage_totals_to_proto(totals) for totals in report.groups],
            total=usage_totals_to_proto(report.total),
            currency=report.currency,
        )

    async def PutWidgetType(
        self,
        request: pb.PutWidgetTypeRequest,
        context: grpc.aio.ServicerContext[pb.PutWidgetTypeRequest, pb.PutWidgetTypeResponse],
    ) -> pb.PutWidgetTypeResponse:
        result = await self._service.widget_types.put(
            request.name,
            request.schema_json,
            request.page,
            force=request.force,
            actor=actor_of(context),
        )
        return pb.PutWidgetTypeResponse(
            widget_type=convert.widget_type(result.widget_type),
            removed_modules=list(result.removed_modules),
        )

    async def ListWidgetTypes(
        self,
        request: pb.ListWidgetTypesRequest,
        context: grpc.aio.ServicerContext[pb.ListWidgetTypesRequest, pb.ListWidgetTypesResponse],
    ) -> pb.ListWidgetTypesResponse:
        found = await self._service.widget_types.list()
        return pb.ListWidgetTypesResponse(widget_types=[convert.widget_type(v) for v in found])

    async def GetWidgetType(
        self,
        request: pb.GetWidgetTypeRequest,
        context: grpc.aio.ServicerContext[pb.GetWidgetTypeRequest, pb.GetWidgetTypeResponse],
    ) -> pb.GetWidgetTypeResponse:
        view = await self._service.widget_types.get(_required(request.name, "widget type name"))
        return pb.GetWidgetTypeResponse(widget_type=convert.widget_type(view), page=view.page)

    async def DeleteWidgetType(
        self,
        request: pb.DeleteWidgetTypeRequest,
        context: grpc.aio.ServicerContext[pb.DeleteWidgetTypeRequest, pb.DeleteWidgetTypeResponse],
    ) -> pb.DeleteWidgetTypeResponse:
        removed = await self._service.widget_types.delete(
            _required(request.name, "widget type name"),
            force=request.force,
            actor=actor_of(context),
        )
        return pb.DeleteWidgetTypeResponse(widgets_removed=removed)
