"""A credential secret appears once, in the create/rotate answer: never in audit, logs or lists."""

from __future__ import annotations

from helpers.admin_cli import Admin
from helpers.store_backend import dump


def test_secret_is_printed_once_and_nowhere_else(admin: Admin) -> None:
    created = admin.run(
        "--verbose", "credentials", "create", "--kind", "client", "--principal", "alice"
    )
    secret = created.stdout.strip().splitlines()[-1]
    assert secret.startswith("tobe_")
    assert created.stdout.count(secret) == 1
    assert secret not in created.stderr
    credential_id = admin.json("credentials", "list")[0]["id"]
    rotated = admin.run("--verbose", "credentials", "rotate", credential_id)
    new_secret = rotated.stdout.strip().splitlines()[-1]
    assert new_secret.startswith("tobe_") and new_secret != secret
    assert new_secret not in rotated.stderr
    for args in (
        ("credentials", "list", "--all"),
        ("credentials", "list", "--all", "--json"),
        ("credentials", "show", credential_id),
        ("audit",),
        ("audit", "--json"),
        ("--verbose", "status"),
    ):
        result = admin.run(*args)
        for value in (secret, new_secret):
            assert value not in result.output
            assert value.split("_", 2)[2] not in result.output
    stored = dump(admin.store_url)
    assert credential_id in stored
    for value in (secret, new_secret):
        assert value.split("_", 2)[2] not in stored


def test_a_token_typed_into_a_label_is_redacted_in_the_audit(admin: Admin) -> None:
    other = admin.json("credentials", "create", "--kind", "client", "--principal", "x")["secret"]
    admin.run(
        "credentials", "create", "--kind", "client", "--principal", "y", "--label", f"was {other}"
    )
    details = admin.json("audit", "--action", "credential.create")[0]["details"]
    assert other not in details["label"] and "[REDACTED]" in details["label"]
