"""Proto <-> domain conversions of the Management contract."""

from __future__ import annotations

import json

from mind.approvals.model import ApprovalRecord
from mind.awareness.health import AdapterHealth
from mind.events.payloads import approval_view
from mind.management.records import (
    AuditRecord,
    CredentialInfo,
    HandInfo,
    ModelBudgetInfo,
    ServiceInfo,
    StatusReport,
)
from mind.widgets.types import WidgetTypeView
from mind.wire.convert import approval_to_proto
from tobe.runtime.timestamps import to_timestamp
from tobe.v1 import common_pb2, management_pb2

KIND_FROM_PROTO: dict[management_pb2.CredentialKind.ValueType, str] = {
    management_pb2.CREDENTIAL_KIND_CLIENT: "client",
    management_pb2.CREDENTIAL_KIND_HAND: "hand",
    management_pb2.CREDENTIAL_KIND_SERVICE: "service",
}
KIND_TO_PROTO = {value: key for key, value in KIND_FROM_PROTO.items()}


def kind_name(kind: management_pb2.CredentialKind.ValueType) -> str:
    """The store's kind for a proto kind; "" for UNSPECIFIED and unknown values."""
    return KIND_FROM_PROTO.get(kind, "")


def credential(info: CredentialInfo) -> management_pb2.Credential:
    return management_pb2.Credential(
        id=info.id,
        kind=KIND_TO_PROTO[info.kind],
        principal=info.principal,
        scopes=list(info.scopes),
        prefix=info.prefix,
        created_at=to_timestamp(info.created_at),
        expires_at=to_timestamp(info.expires_at),
        revoked_at=to_timestamp(info.revoked_at),
        label=info.label,
        last_seen_at=to_timestamp(info.last_seen_at),
        device_id=info.device_id,
    )


def hand(info: HandInfo) -> management_pb2.HandStatus:
    return management_pb2.HandStatus(
        hand_id=info.hand_id,
        name=info.name,
        principal=info.principal,
        tools=info.tools,
        connected_at=to_timestamp(info.connected_at),
        version=info.version,
    )


def service(info: ServiceInfo) -> management_pb2.ServiceStatus:
    return management_pb2.ServiceStatus(name=info.name, address=info.address, state=info.state)


def status(report: StatusReport) -> management_pb2.GetStatusResponse:
    return management_pb2.GetStatusResponse(
        mode=report.mode,
        version=report.version,
        database_url=report.database_url,
        database_size_bytes=report.database_size_bytes,
        schema_revision=report.schema_revision,
        hands=[hand(item) for item in report.hands],
        gateway_subscribers=report.gateway_subscribers,
        conversations=report.conversations,
        active_runs=report.active_runs,
        data_dir=report.data_dir,
        services=[service(item) for item in report.services],
        adapters=[adapter(item) for item in report.adapters.adapters],
        adapters_error=report.adapters.error,
        model_budget=model_budget(report.model_budget) if report.model_budget else None,
        decision_failures=dict(report.decision_failures),
    )


def model_budget(info: ModelBudgetInfo) -> management_pb2.ModelBudget:
    return management_pb2.ModelBudget(
        model=info.model,
        context_window=info.context_window,
        window_source=info.window_source,
        output_tokens=info.output_tokens,
        reserve_tokens=info.reserve_tokens,
        prompt_limit=info.prompt_limit,
        overhead_tokens=info.overhead_tokens,
        tools=info.tools,
        profile=info.profile,
        structured_output=info.structured_output,
    )


def adapter(info: AdapterHealth) -> management_pb2.AdapterStatus:
    return management_pb2.AdapterStatus(
        instance=info.instance,
        adapter_id=info.adapter_id,
        state=info.state,
        last_error=info.last_error,
        restarts=info.restarts,
        next_restart_at=to_timestamp(info.next_restart_at),
    )


def audit_entry(record: AuditRecord) -> management_pb2.AuditEntry:
    return management_pb2.AuditEntry(
        id=record.id,
        time=to_timestamp(record.time),
        action=record.action,
        actor=record.actor,
        target=record.target,
        details_json=json.dumps(record.details, sort_keys=True),
    )


def approval(record: ApprovalRecord) -> common_pb2.Approval:
    """The Approval contract as the Mind sends it, without raw arguments."""
    return approval_to_proto(approval_view(record))


def widget_type(view: WidgetTypeView) -> management_pb2.WidgetTypeInfo:
    return management_pb2.WidgetTypeInfo(
        name=view.name,
        version=view.version,
        modules=[
            management_pb2.WidgetTypeModule(
                name=module.name,
                description=module.description,
                schema_json=json.dumps(module.schema),
            )
            for module in view.modules.values()
        ],
        page_bytes=len(view.page.encode()),
        created_at=to_timestamp(view.created_at),
        widgets=view.widgets,
    )
