"""The credentials a deployment needs, created once by `tobe up` (or `tobe mind serve --provision`).

Each secret lives in `<data dir>/credentials/<name>.token` (file 0600, directory 0700), where the
service that uses it looks by default. A file whose token the store no longer accepts (a new
database, a revoked credential) is replaced; a valid one is reused. A valid one that lacks a
scope the deployment now needs (e.g. the `hand:<name>` a Hand attaches under, with a changed
`[hand] name`) is revoked and replaced. Creation goes through the
Management service, so every credential gets its secret-free audit row.

In a container deployment (`docker/compose.yaml`) the services run apart from the Mind, each
with only its own secret: with `services_dir`, Face's and the Hand's secrets, and the Awareness
link token, go to `<services_dir>/<service>/<service>.token` instead (one volume per service,
mounted as that service's `<data dir>/credentials`); the local user's client credential stays
in the Mind's data directory.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from mind import credentials
from mind.credentials import Identity
from mind.credentials.local_user import local_user
from mind.management.service import ManagementService
from mind.store.database import Database
from mind.store.schema_head import upgrade_when_behind
from tobe.config import HandSettings, Settings
from tobe.runtime.private_files import private_directory
from tobe.runtime.statelock import StateLock
from tobe.runtime.tokens import AWARENESS, create_token, token_file, write_token
from tobe.scopes import ADMIN, APPROVE, CHAT, GATEWAY, HAND_PREFIX, SERVE_PREFIX

ACTOR = "tobe up"
PROVISION_ACTOR = "tobe mind serve --provision"


@dataclass(frozen=True)
class LocalCredential:
    """One local credential: the token file name and what the credential may do."""

    name: str
    kind: str
    principal: str
    scopes: tuple[str, ...]


def local_credentials(
    user: str | None = None, *, hand_name: str = HandSettings().name
) -> tuple[LocalCredential, ...]:
    """Face's gateway credential, the local Hand's, and the local user's client credential."""
    person = user or local_user()
    return (
        LocalCredential("face", "service", "face", (GATEWAY,)),
        # The local Hand executes for the local user's conversations (`serve:<user>`) and
        # attaches under the configured Hand name (`hand:<name>`).
        LocalCredential(
            "hand", "hand", "hand-local", (f"{SERVE_PREFIX}{person}", f"{HAND_PREFIX}{hand_name}")
        ),
        LocalCredential("client", "client", person, (CHAT, APPROVE, ADMIN)),
    )


def awareness_token_file(services_dir: Path) -> Path:
    """Where `provision(..., services_dir=...)` keeps the Mind-Awareness link token."""
    return token_file(services_dir / AWARENESS, AWARENESS)


def provision(
    settings: Settings, *, lock_timeout: float = 10.0, services_dir: Path | None = None
) -> list[str]:
    """Migrate the store and make sure every local credential exists; returns the new names.

    Holds the data directory's state lock meanwhile (no Mind may run), and releases it before
    returning so that the Mind can take it. With `services_dir`, the services' secrets go there
    (see the module docstring).
    """
    lock = StateLock(settings.data_dir, "tobe up (creating local credentials)")
    lock.acquire(lock_timeout)
    try:
        upgrade_when_behind(settings.store_url)
        actor = ACTOR if services_dir is None else PROVISION_ACTOR
        wanted = local_credentials(hand_name=settings.hand.name)
        created = asyncio.run(_ensure(settings, wanted, services_dir, actor))
        if services_dir is not None:
            link = awareness_token_file(services_dir)
            if not link.exists():
                private_directory(link.parent)
                create_token(link)
                created.append("awareness")
        return created
    finally:
        lock.release()


def credential_file(
    settings: Settings, credential: LocalCredential, services_dir: Path | None
) -> Path:
    """Where `provision` keeps `credential`'s token (with `services_dir`: a container layout)."""
    if services_dir is None or credential.kind == "client":
        return token_file(settings.credentials_dir, credential.name)
    return token_file(services_dir / credential.name, credential.name)


async def _ensure(
    settings: Settings,
    wanted: tuple[LocalCredential, ...],
    services_dir: Path | None,
    actor: str,
) -> list[str]:
    database = Database.open(settings.store_url)
    service = ManagementService(
        database, database_url=settings.store_url, data_dir=settings.data_dir
    )
    created: list[str] = []
    try:
        for credential in wanted:
            path = credential_file(settings, credential, services_dir)
            private_directory(path.parent)
            current = await _current(database, path)
            if current is not None and _fits(current, credential):
                continue
            if current is not None:
                await service.revoke_credential(current.credential_id, actor=actor)
            issued = await service.create_credential(
                kind=credential.kind,
                principal=credential.principal,
                scopes=credential.scopes,
                label=f"local {credential.name} (created by {actor})",
                actor=actor,
            )
            write_token(path, issued.secret)
            created.append(credential.name)
    finally:
        await database.close()
    return created


async def _current(database: Database, path: Path) -> Identity | None:
    """Who the token in `path` authenticates as; None when missing or no longer accepted."""
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        return None
    return await database.read(lambda session: credentials.authenticate(session, token))


def _fits(identity: Identity, credential: LocalCredential) -> bool:
    return (
        identity.kind == credential.kind
        and identity.principal == credential.principal
        and set(credential.scopes) <= set(identity.scopes)
    )
