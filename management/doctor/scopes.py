"""Every live credential holds only scopes valid for its kind (`tobe.scopes`).

Credentials created before scopes were checked may hold names nobody knows (a typo such as
'chta') or a scope of another kind. Such a scope grants nothing, so the credential works as
far as its valid scopes go: a warning, with the two ways out. Read like the `credentials`
check: the running Mind's management socket, or the store in this process while none runs.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from management.connection import ManagementUnavailable
from management.doctor.calls import list_credentials
from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from management.render import KIND_NAMES
from tobe.scopes import KINDS, scope_named
from tobe.v1 import management_pb2 as pb

CHECK = "scopes"


def check_scopes_held(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    if doctor.store_revision is None:
        return [Finding(Status.SKIP, CHECK, "the store cannot be read (see store)")]
    if not doctor.online and not doctor.store_revision:
        return [Finding(Status.SKIP, CHECK, "the store holds no credentials yet")]
    if not doctor.online and not doctor.store_current:
        return [Finding(Status.SKIP, CHECK, "the store is not at the latest revision (see store)")]
    try:
        _, response = asyncio.run(list_credentials(settings))
    except ManagementUnavailable as exc:
        return [Finding(Status.FAIL, CHECK, str(exc))]
    now = datetime.now(UTC)
    live = [credential for credential in response.credentials if _live(credential, now)]
    findings = [
        Finding(Status.WARN, CHECK, f"{_named(credential)}: {problem}", _fix(credential))
        for credential in live
        for problem in _problems(credential)
    ]
    if findings:
        return findings
    return [Finding(Status.OK, CHECK, _all_valid(len(live)))]


def _all_valid(live: int) -> str:
    if live == 0:
        return "no credential is live"
    if live == 1:
        return "the one live credential holds only valid scopes"
    return f"all {live} live credentials hold only valid scopes"


def _live(credential: pb.Credential, now: datetime) -> bool:
    if credential.HasField("revoked_at"):
        return False
    return not credential.HasField("expires_at") or credential.expires_at.ToDatetime(UTC) > now


def _problems(credential: pb.Credential) -> list[str]:
    """One sentence per scope it holds that is no scope, or one for another kind (what
    `tobe.scopes.check_scopes` refuses at creation)."""
    kind = KIND_NAMES.get(credential.kind, "unspecified")
    problems = []
    for scope in credential.scopes:
        entry = scope_named(scope)
        if entry is None:
            problems.append(f"holds {scope!r}, which is not a scope")
        elif kind in KINDS and entry.kind != kind:
            problems.append(f"holds {scope!r}, a scope for {entry.kind} credentials")
    return problems


def _fix(credential: pb.Credential) -> str:
    return (
        "the scope grants nothing, so the credential may stay as it is; to correct it, revoke it "
        f"(`tobe admin credentials revoke {credential.id}`) and create one with valid scopes "
        "(`tobe admin credentials create --scope …`): rotating keeps its scopes"
    )


def _named(credential: pb.Credential) -> str:
    """`credential 01J… (client of 'alice', "phone")`."""
    kind = KIND_NAMES.get(credential.kind, "unspecified")
    label = f', "{credential.label}"' if credential.label else ""
    return f"credential {credential.id} ({kind} of {credential.principal!r}{label})"
