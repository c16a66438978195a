"""`tobe admin whoami`: which credential a token is, so a person knows their principal (what a
Hand serving them needs as `serve:<principal>`), and one line for a token that is none."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.admin_cli import Admin

from tobe.runtime.tokens import write_token


@pytest.fixture(autouse=True)
def no_token_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TOBE_CHAT_TOKEN", "TOBE_HAND_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def created(admin: Admin, kind: str, principal: str, *scopes: str) -> dict:
    flags = [part for scope in scopes for part in ("--scope", scope)]
    return admin.json("credentials", "create", "--kind", kind, "--principal", principal, *flags)


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Error: ")]


def test_without_arguments_it_names_the_local_user_and_the_scope_a_hand_needs(
    admin: Admin,
) -> None:
    mine = created(admin, "client", "alice", "chat", "approve")
    local = admin.data_dir / "credentials" / "client.token"
    local.parent.mkdir(mode=0o700)
    write_token(local, mine["secret"])

    found = admin.json("whoami")
    assert found["source"] == str(local)
    assert found["credential"]["id"] == mine["credential"]["id"]
    assert found["credential"]["principal"] == "alice"
    assert found["credential"]["kind"] == "client"
    assert found["credential"]["scopes"] == ["chat", "approve"]
    assert found["credential"]["state"] == "active"

    shown = admin.run("whoami").stdout
    assert "alice" in shown and "never" in shown
    assert "--scope serve:alice" in shown


def test_a_hand_credential_from_the_environment_says_whom_it_serves(
    admin: Admin, monkeypatch: pytest.MonkeyPatch
) -> None:
    hand = created(admin, "hand", "laptop", "serve:alice", "hand:garden")
    monkeypatch.setenv("TOBE_HAND_TOKEN", hand["secret"])
    found = admin.json("whoami")
    assert found["source"] == "TOBE_HAND_TOKEN"
    assert found["credential"]["principal"] == "laptop"
    assert found["serves"] == ["alice", "laptop"]


def test_a_revoked_credential_is_shown_and_ends_with_one_error_line(
    admin: Admin, tmp_path: Path
) -> None:
    hand = created(admin, "hand", "laptop")
    admin.run("credentials", "revoke", hand["credential"]["id"])
    token_file = tmp_path / "hand.token"
    token_file.write_text(hand["secret"] + "\n")
    result = admin.run("whoami", "--token-file", str(token_file), ok=False)
    assert result.exit_code == 1
    assert "revoked" in result.stdout
    assert errors(result.stderr) == [
        "Error: this credential is revoked; it no longer authenticates (create a new one with "
        "`tobe admin credentials create --kind hand --principal laptop`)"
    ]


def test_a_token_with_a_credentials_prefix_but_another_secret_is_told_apart(
    admin: Admin, tmp_path: Path
) -> None:
    mine = created(admin, "client", "alice", "chat")
    secret: str = mine["secret"]
    mistyped = secret[:-1] + ("a" if secret[-1] != "a" else "b")
    token_file = tmp_path / "mistyped.token"
    token_file.write_text(mistyped)
    result = admin.run("whoami", "--token-file", str(token_file), ok=False)
    assert result.exit_code == 1 and result.stdout == ""
    assert errors(result.stderr) == [
        f"Error: the credential from {token_file} carries the prefix of "
        f"{mine['credential']['id']} (client of alice) but not its secret: it is mistyped or "
        "altered, and authenticates as nobody"
    ]
    assert mistyped not in result.output


@pytest.mark.parametrize(
    ("token", "says"),
    [
        ("<your token>", "is not a ToBe credential"),
        ("tobe_0123456789abcdef_" + "x" * 43, "no credential of the data directory"),
    ],
)
def test_a_token_that_is_no_credential_here_is_one_error_line(
    admin: Admin, tmp_path: Path, token: str, says: str
) -> None:
    token_file = tmp_path / "given.token"
    token_file.write_text(token)
    result = admin.run("whoami", "--token-file", str(token_file), ok=False)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert len(errors(result.stderr)) == 1 and says in result.stderr


def test_without_a_local_credential_it_says_where_one_comes_from(admin: Admin) -> None:
    result = admin.run("whoami", ok=False)
    assert len(errors(result.stderr)) == 1
    assert "client.token" in result.stderr and "tobe up" in result.stderr
