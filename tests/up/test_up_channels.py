"""`tobe up` with a channel enabled also runs the channels process, after Face, supervised like
the others; with none enabled nothing changes."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest
from helpers.eventually import eventually
from helpers.ports import free_port
from helpers.up_process import gone, printed, service_pids, spawn, up_env

from management.up_plan import enabled_channels, plan_services
from management.up_tls import LocalTls
from tobe.config import Settings

ALL = {"awareness", "mind", "face", "hand", "channels"}
PASSWORD = "bot-password-never-logged"


def test_with_no_channel_enabled_no_channels_process_is_planned(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert enabled_channels(settings) == []
    assert [plan.name for plan in plan_services(settings, ALL, LocalTls())] == [
        "awareness",
        "mind",
        "face",
        "hand",
    ]


def test_an_enabled_channel_adds_the_channels_process_after_face(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    settings.channels.email.enabled = True
    assert enabled_channels(settings) == ["email"]
    [channels] = [
        plan for plan in plan_services(settings, ALL, LocalTls()) if plan.group == "channels"
    ]
    assert channels.after == ("face",)
    # It serves nothing but its probe: ready once it answers SERVING there.
    assert not channels.publishes and not channels.also_publishes
    assert channels.probe == f"unix:{tmp_path.resolve() / 'channels-probe.sock'}"
    assert channels.env["TOBE_CHANNELS__PROBE_LISTEN"] == channels.probe
    # An installation without the channels' code runs without them.
    names = [plan.name for plan in plan_services(settings, ALL - {"channels"}, LocalTls())]
    assert "channels" not in names


@pytest.mark.e2e
def test_up_starts_the_channels_process_and_stops_it_with_the_others(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    config = tmp_path / "config.toml"
    # A homeserver nobody serves: the channel fails and is started again, the process stays up.
    config.write_text(
        "[channels.matrix]\nenabled = true\n"
        f'homeserver = "http://127.0.0.1:{free_port()}"\n'
        f'user_id = "@tobe:example.org"\npassword = "{PASSWORD}"\n'
    )
    env = {**up_env(data_dir), "TOBE_CONFIG": str(config)}
    up = spawn(["up", "--no-web"], env)
    try:
        up.expect("ToBe is up.")
        up.expect("Press Ctrl-C")
        output = printed(up)
        assert "channels   pid " in output and str(data_dir / "logs" / "channels.log") in output
        assert "Channels (matrix):" in output and "tobe admin channels list" in output
        log = data_dir / "logs" / "channels.log"
        eventually(
            lambda: log.read_text().count("channel matrix stopped: "),
            until=lambda count: count >= 2,
            what="the matrix channel failing and being started again",
            context=log.read_text,
        )
        pids = service_pids(printed(up))
        assert len(pids) == 5

        up.kill(2)  # SIGINT, as Ctrl-C
        up.expect("Stopping ToBe")
        up.expect(pexpect.EOF, timeout=60)
        up.close()
        assert up.exitstatus == 0
        assert all(gone(pid) for pid in pids)
        text = log.read_text()
        assert "channels stopped" in text and PASSWORD not in text
    finally:
        up.close(force=True)
