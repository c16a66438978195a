"""`tobe doctor` beside a running Mind: it asks the Mind's management socket, and leaves it be."""

from __future__ import annotations

from pathlib import Path

import pytest
from doctor_run import doctor_env, run_doctor, store_settings
from helpers.admin_cli import Admin
from helpers.mind_process import running_mind

from mind.management import provision
from tobe.provider_detect import DEMO_SCRIPT

pytestmark = pytest.mark.e2e


def test_a_running_mind_is_checked_through_its_socket(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    provision(store_settings(data_dir))
    with running_mind(tmp_path, script=DEMO_SCRIPT, clients=()) as mind:
        env = doctor_env(data_dir, tmp_path / "none.toml", TOBE_MIND__LISTEN=mind.address)
        status, findings = run_doctor(env)
        assert status == 0, findings
        assert findings["port mind"] == [
            f"ok {mind.address} is held by the running ToBe mind (pid {mind.process.pid})"
        ]
        assert findings["credentials"] == ["ok face, hand, client: accepted by the store (online)"]
        assert findings["scopes"] == ["ok all 4 live credentials hold only valid scopes"]
        assert findings["hands"][0].startswith("warn no Hand is attached")

        # Configured elsewhere: the address it published is what counts.
        _, findings = run_doctor(doctor_env(data_dir, tmp_path / "none.toml"))
        [port] = findings["port mind"]
        assert port.startswith(
            f"ok the running ToBe mind listens at {mind.address} (pid {mind.process.pid}); "
            "configured: 127.0.0.1:"
        )
        assert not port.endswith(mind.address)

        token = data_dir / "credentials" / "client.token"
        prefix = token.read_text().split("_")[1]
        admin = Admin(data_dir)
        [client] = [c for c in admin.json("credentials", "list") if c["prefix"] == prefix]
        admin.run("credentials", "revoke", client["id"])
        status, findings = run_doctor(env, "--fix")
        assert status == 1
        assert findings["credentials"] == [
            f"FAIL {token} was revoked (credential {client['id']}) — fix: stop ToBe, then run "
            "`tobe doctor --fix`"
        ]
        assert mind.process is not None and mind.process.poll() is None
