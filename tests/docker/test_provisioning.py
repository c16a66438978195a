"""`tobe mind serve --provision DIR`: each other service's secret in its own directory, reused."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

from mind import credentials
from mind.management.local_credentials import PROVISION_ACTOR, provision
from mind.management.service import ManagementService
from mind.store.database import Database
from tobe.config import Settings


def settings_for(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url="")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def secrets_in(services_dir: Path) -> dict[str, str]:
    return {
        name: (services_dir / name / f"{name}.token").read_text().strip()
        for name in ("face", "hand", "awareness")
    }


async def accepted(settings: Settings, token: str) -> credentials.Identity | None:
    database = Database.open(settings.store_url)
    try:
        return await database.read(lambda session: credentials.authenticate(session, token))
    finally:
        await database.close()


async def revoke(settings: Settings, principal: str) -> None:
    database = Database.open(settings.store_url)
    try:
        service = ManagementService(
            database, database_url=settings.store_url, data_dir=settings.data_dir
        )
        for info in await service.list_credentials(principal=principal):
            await service.revoke_credential(info.id, actor="test")
    finally:
        await database.close()


def test_each_service_secret_goes_to_its_own_owner_only_directory(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    services_dir = tmp_path / "credentials"

    created = provision(settings, services_dir=services_dir)

    assert sorted(created) == ["awareness", "client", "face", "hand"]
    for name in ("face", "hand", "awareness"):
        directory = services_dir / name
        assert sorted(p.name for p in directory.iterdir()) == [f"{name}.token"]
        assert mode(directory) == 0o700 and mode(directory / f"{name}.token") == 0o600
    own = settings.credentials_dir
    assert sorted(p.name for p in own.iterdir()) == ["client.token"]
    assert mode(own / "client.token") == 0o600

    tokens = secrets_in(services_dir)
    face = asyncio.run(accepted(settings, tokens["face"]))
    hand = asyncio.run(accepted(settings, tokens["hand"]))
    assert face is not None and face.kind == "service" and face.has_scope("gateway")
    assert hand is not None and hand.kind == "hand"
    # The Awareness link token is a shared secret, not a credential of the store.
    assert asyncio.run(accepted(settings, tokens["awareness"])) is None


def test_a_restart_keeps_valid_secrets_and_replaces_a_revoked_one(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    services_dir = tmp_path / "credentials"
    provision(settings, services_dir=services_dir)
    before = secrets_in(services_dir)

    assert provision(settings, services_dir=services_dir) == []
    assert secrets_in(services_dir) == before

    asyncio.run(revoke(settings, "hand-local"))
    assert provision(settings, services_dir=services_dir) == ["hand"]
    after = secrets_in(services_dir)
    assert after["hand"] != before["hand"]
    assert asyncio.run(accepted(settings, after["hand"])) is not None
    assert {k: v for k, v in after.items() if k != "hand"} == {
        k: v for k, v in before.items() if k != "hand"
    }


def test_a_deleted_awareness_link_token_is_created_anew(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    services_dir = tmp_path / "credentials"
    provision(settings, services_dir=services_dir)
    old = secrets_in(services_dir)["awareness"]
    (services_dir / "awareness" / "awareness.token").unlink()

    assert provision(settings, services_dir=services_dir) == ["awareness"]
    assert secrets_in(services_dir)["awareness"] not in ("", old)


def test_provisioned_credentials_are_audited_as_created_by_the_provisioning_mind(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path)
    provision(settings, services_dir=tmp_path / "credentials")

    async def actors() -> list[str]:
        database = Database.open(settings.store_url)
        try:
            service = ManagementService(
                database, database_url=settings.store_url, data_dir=settings.data_dir
            )
            entries = await service.audit_entries(action="credential.create", limit=10)
            return [entry.actor for entry in entries]
        finally:
            await database.close()

    assert asyncio.run(actors()) == [PROVISION_ACTOR] * 3


def test_the_hand_secret_grants_the_configured_hand_name_and_is_replaced_when_it_changes(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path)
    services_dir = tmp_path / "credentials"
    settings.hand.name = "workspace"
    provision(settings, services_dir=services_dir)
    old = secrets_in(services_dir)["hand"]
    assert asyncio.run(accepted(settings, old)).has_scope("hand:workspace")

    settings.hand.name = "laptop"
    assert provision(settings, services_dir=services_dir) == ["hand"]
    new = asyncio.run(accepted(settings, secrets_in(services_dir)["hand"]))
    assert new is not None and new.has_scope("hand:laptop")
    assert asyncio.run(accepted(settings, old)) is None  # the replaced secret is revoked
