"""`tobe admin status` shows Awareness's adapters and their health, asked of the running Mind."""

from __future__ import annotations

from pathlib import Path

import pytest
from awareness_harness import HERE, TOKEN, AwarenessProcess, add_adapter
from helpers.admin_cli import Admin
from helpers.eventually import eventually
from helpers.mind_process import running_mind

pytestmark = pytest.mark.e2e


def test_admin_status_shows_each_adapter_state_and_last_error(
    awareness_dirs: AwarenessProcess, tmp_path: Path
):
    add_adapter(awareness_dirs.adapters_dir, HERE / "adapters" / "flaky")
    awareness_dirs.write_config("flaky@down", {"auto_start": True})
    down_data = awareness_dirs.instance_dir("flaky@down") / "data"
    down_data.mkdir(parents=True)
    (down_data / "fail_start").touch()
    awareness_dirs.start()
    env = {
        "TOBE_MIND__AWARENESS_ADDRESS": awareness_dirs.target,
        "TOBE_AWARENESS__TOKEN": TOKEN,
    }
    with running_mind(tmp_path, script=None, **env) as mind:
        admin = Admin(mind.data_dir)

        def adapters() -> dict[str, dict]:
            return {a["instance"]: a for a in admin.json("status")["adapters"]}

        health = eventually(
            adapters,
            what="flaky running and flaky@down failed",
            until=lambda a: (
                a.get("flaky", {}).get("state") == "running"
                and a.get("flaky@down", {}).get("state") == "failed"
            ),
        )
        down = health["flaky@down"]
        refused = "start failed: ConnectionRefusedError: cannot reach the service"
        assert down["last_error"] == refused
        assert down["next_restart_at"] is not None
        assert health["flaky"]["last_error"] == ""
        shown = admin.run("status").stdout
        assert "Awareness adapters" in shown
        assert "flaky@down" in shown and "cannot reach the service" in shown

        awareness_dirs.stop()
        unreachable = eventually(
            lambda: admin.json("status"),
            what="status naming the unreachable Awareness",
            until=lambda s: s["adapters_error"] != "",
        )
        assert unreachable["adapters"] == []
        assert unreachable["adapters_error"].startswith("Awareness did not answer: UNAVAILABLE")
