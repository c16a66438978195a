"""`tobe doctor` names each live credential holding a scope that is no scope, or one of another
kind (left from before scopes were checked), with the way out; revoked ones are not its concern."""

from __future__ import annotations

from pathlib import Path

from doctor_run import doctor_env, run_doctor, store_settings
from helpers.admin_cli import Admin
from helpers.mind_process import issue_token

from mind.management import provision


def _fix(credential_id: str) -> str:
    return (
        "— fix: the scope grants nothing, so the credential may stay as it is; to correct it, "
        f"revoke it (`tobe admin credentials revoke {credential_id}`) and create one with valid "
        "scopes (`tobe admin credentials create --scope …`): rotating keeps its scopes"
    )


def _credential_id(admin: Admin, token: str) -> str:
    prefix = token.split("_")[1]
    [found] = [c for c in admin.json("credentials", "list", "--all") if c["prefix"] == prefix]
    return str(found["id"])


def test_a_credential_holding_an_unknown_scope_is_named_with_the_scope_and_the_fix(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    provision(store_settings(data_dir))
    admin = Admin(data_dir)
    env = doctor_env(data_dir, tmp_path / "none.toml")
    status, findings = run_doctor(env)
    assert findings["scopes"] == ["ok all 3 live credentials hold only valid scopes"]

    # Written straight into the store, as credentials were before scopes were checked.
    typo = issue_token(admin.store_url, kind="client", principal="alice", scopes=["chat", "chta"])
    foreign = issue_token(admin.store_url, kind="client", principal="bob", scopes=["gateway"])
    revoked = issue_token(admin.store_url, kind="client", principal="carol", scopes=["bogus"])
    admin.run("credentials", "revoke", _credential_id(admin, revoked))

    status, findings = run_doctor(env)
    assert status == 0
    typo_id, foreign_id = _credential_id(admin, typo), _credential_id(admin, foreign)
    assert sorted(findings["scopes"]) == sorted(
        [
            f"warn credential {typo_id} (client of 'alice'): holds 'chta', which is not a scope "
            f"{_fix(typo_id)}",
            f"warn credential {foreign_id} (client of 'bob'): holds 'gateway', a scope for "
            f"service credentials {_fix(foreign_id)}",
        ]
    )
