"""The store: reachable, and at the schema revision this ToBe's migrations end at.

A PostgreSQL server is first tried on a connection of the doctor's own, with a timeout and a
fix for each usual refusal (`management.doctor.pg_server`).

Read without the state lock (a revision read changes nothing, and works while the Mind runs).
A store behind is migrated by the Mind at its start; `--fix` migrates it now (`tobe db upgrade`).
"""

from __future__ import annotations

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor

CHECK = "store"


def check_store(doctor: Doctor) -> list[Finding]:
    # Imported here: SQLAlchemy and Alembic are heavy, and only this check needs them.
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    from management.doctor.pg_server import unreachable
    from mind.store import migrate
    from mind.store.engine import is_sqlite, redacted_url

    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    url = settings.store_url
    shown = redacted_url(url)
    head = migrate.head_revision()
    refused = None if is_sqlite(url) else unreachable(url)
    if refused is not None:
        return [Finding(Status.FAIL, CHECK, *refused)]
    try:
        revision = migrate.current(url)
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        return [
            Finding(
                Status.FAIL,
                CHECK,
                f"cannot open {shown}: {reason}",
                "check database_url (TOBE_DATABASE_URL) and that the database server runs",
            )
        ]
    doctor.store_revision = revision or ""
    if revision == head:
        doctor.store_current = True
        return [Finding(Status.OK, CHECK, f"{shown} at the latest revision {head}")]
    if revision is None:
        text = f"{shown} has no schema yet (the Mind creates it at its first start)"
        return [Finding(Status.OK, CHECK, text)]
    try:
        ScriptDirectory.from_config(migrate.alembic_config()).get_revision(revision)
    except CommandError:
        return [
            Finding(
                Status.FAIL,
                CHECK,
                f"{shown} is at revision {revision}, which this ToBe does not know (newer?)",
                "run the ToBe version that wrote it, or restore a backup",
            )
        ]
    if not doctor.fix or doctor.online:
        return [
            Finding(Status.WARN, CHECK, f"{shown} is at {revision}; the latest is {head}", _FIX)
        ]
    migrate.upgrade(url)
    doctor.store_revision, doctor.store_current = head, True
    return [Finding(Status.FIXED, CHECK, f"migrated {shown} from {revision} to {head}")]


_FIX = "the Mind migrates it at its next start; `tobe doctor --fix` (or `tobe db upgrade`) now"
