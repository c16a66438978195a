"""The local service credentials (`<data_dir>/credentials/*.token`) the store still accepts.

Read through the Management service (`management.connection`): the running Mind's socket, or
in this process under the state lock while no Mind runs. A token is matched to its store row
by its public prefix (`tobe_<prefix>_…`), so the secret never leaves the file. `--fix`
provisions missing, revoked or unfitting ones as `tobe up` does at its start (which needs the
state lock: ToBe stopped). In the Mind's container the services' tokens are in their own
directories (`management.doctor.container`), and a restart of the Mind is the fix; in the
container of a Mind that provisions none (a second Mind on a shared database) the check skips.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from management.connection import ManagementUnavailable
from management.doctor.calls import list_credentials
from management.doctor.container import RESTART_FIX
from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from mind import management as mind_management
from tobe.config import Settings
from tobe.runtime.container import PROVISION_VARIABLE
from tobe.runtime.statelock import StateLockBusy
from tobe.runtime.tokens import token_file
from tobe.v1 import management_pb2 as pb

CHECK = "credentials"
_FIX = "`tobe doctor --fix` provisions them again, as `tobe up` does at its start"
_NOT_PROVISIONING = (
    f"this Mind provisions no credentials ({PROVISION_VARIABLE} is unset): the token files are "
    "with the Mind that does"
)
_PROVISIONING_DOCTOR = (
    f"run `tobe doctor` in the container of the Mind that has {PROVISION_VARIABLE}"
)


def check_credentials(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    if doctor.store_revision is None:
        return [Finding(Status.SKIP, CHECK, "the store cannot be read (see store)")]
    if doctor.container is not None and doctor.services_dir is None:
        # A second Mind on a shared database (docker/compose.cluster.yaml): the Mind that
        # provisions keeps the token files; the credentials themselves are in the database.
        return [Finding(Status.SKIP, CHECK, _NOT_PROVISIONING, _PROVISIONING_DOCTOR)]
    if not doctor.online and not doctor.store_revision:
        if doctor.container is not None:
            text = "none yet: the Mind creates them at its start"
            return [Finding(Status.WARN, CHECK, text, RESTART_FIX)]
        if doctor.fix:
            return [_provision(settings, "created")]
        text = f"none yet in {settings.credentials_dir}: `tobe up` creates them at its first start"
        return [Finding(Status.WARN, CHECK, text, "`tobe doctor --fix` creates them now")]
    if not doctor.online and not doctor.store_current and not doctor.fix:
        return [Finding(Status.SKIP, CHECK, "the store is not at the latest revision (see store)")]
    wanted = {
        credential.name: credential
        for credential in mind_management.local_credentials(hand_name=settings.hand.name)
    }
    files = {
        name: mind_management.credential_file(settings, credential, doctor.services_dir)
        for name, credential in wanted.items()
    }
    try:
        mode, problems = asyncio.run(_problems(settings, wanted, files))
    except ManagementUnavailable as exc:
        return [Finding(Status.FAIL, CHECK, str(exc))]
    if not problems:
        return [Finding(Status.OK, CHECK, f"{', '.join(wanted)}: accepted by the store ({mode})")]
    said = "; ".join(f"{files[name]} {reason}" for name, reason in problems.items())
    if doctor.container is not None:
        # The Mind provisions them at every start; --fix cannot while it runs.
        return [Finding(Status.FAIL, CHECK, said, RESTART_FIX)]
    if not doctor.fix:
        return [Finding(Status.FAIL, CHECK, said, _FIX)]
    if doctor.online:
        return [Finding(Status.FAIL, CHECK, said, "stop ToBe, then run `tobe doctor --fix`")]
    return [_provision(settings, f"{said}: provisioned again")]


def _provision(settings: Settings, done: str) -> Finding:
    try:
        created = mind_management.provision(settings, lock_timeout=1.0)
    except StateLockBusy as exc:
        return Finding(Status.FAIL, CHECK, str(exc), "stop ToBe, then run `tobe doctor --fix`")
    files = ", ".join(str(_file(settings, name)) for name in created) or "nothing"
    return Finding(Status.FIXED, CHECK, f"{done}; wrote {files} (owner-only)")


def _file(settings: Settings, name: str) -> Path:
    return token_file(settings.credentials_dir, name)


async def _problems(
    settings: Settings,
    wanted: dict[str, mind_management.LocalCredential],
    files: dict[str, Path],
) -> tuple[str, dict[str, str]]:
    """The Management mode that answered, and what is wrong with each unusable token file."""
    mode, response = await list_credentials(settings)
    stored = {credential.prefix: credential for credential in response.credentials}
    problems = {}
    for name, credential in wanted.items():
        reason = _problem(files[name], credential, stored)
        if reason:
            problems[name] = reason
    return mode, problems


def _problem(
    path: Path, wanted: mind_management.LocalCredential, stored: dict[str, pb.Credential]
) -> str:
    """Why the token in `path` cannot serve as `wanted`; "" when it can."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return "is missing"
    parts = token.split("_")
    if len(parts) < 3 or parts[0] != "tobe":
        return "does not hold a ToBe token"
    found = stored.get(parts[1])
    if found is None:
        return "is not in this store (a different database?)"
    if found.HasField("revoked_at"):
        return f"was revoked (credential {found.id})"
    if found.HasField("expires_at") and found.expires_at.ToDatetime(UTC) <= datetime.now(UTC):
        return f"has expired (credential {found.id})"
    kind = pb.CredentialKind.Name(found.kind).removeprefix("CREDENTIAL_KIND_").lower()
    if kind != wanted.kind or found.principal != wanted.principal:
        return f"is a {kind} credential of {found.principal!r}, not {wanted.principal!r}'s"
    missing = sorted(set(wanted.scopes) - set(found.scopes))
    if missing:
        return f"lacks the scopes {', '.join(missing)} (credential {found.id})"
    return ""
