"""`tobe up`'s options as `TOBE_*` variables, and the order its services start in."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from management.up import chat_command
from management.up_plan import UpOptions, config_names_face_listen, listeners, plan_services
from management.up_tls import LocalTls
from tobe.cli import main
from tobe.config import Settings

ALL = {"awareness", "mind", "face", "hand"}


def test_port_base_sets_each_listen_address_and_a_per_service_address_wins() -> None:
    options = UpOptions(port_base=9000, listen={"face": "unix:/run/face.sock"})
    assert options.environment() == {
        "TOBE_MIND__LISTEN": "127.0.0.1:9010",
        "TOBE_FACE__LISTEN": "unix:/run/face.sock",
        "TOBE_FACE__WEB__LISTEN": "127.0.0.1:9021",
        "TOBE_AWARENESS__LISTEN": "127.0.0.1:9030",
    }


def test_port_base_zero_lets_every_service_pick_a_free_port() -> None:
    env = UpOptions(port_base=0).environment()
    names = ("MIND", "FACE", "FACE__WEB", "AWARENESS")
    assert {env[f"TOBE_{name}__LISTEN"] for name in names} == {"127.0.0.1:0"}


def test_web_port_wins_over_the_port_base_and_no_web_turns_the_web_client_off() -> None:
    assert UpOptions(port_base=9000, web_port=8080).environment()["TOBE_FACE__WEB__LISTEN"] == (
        "127.0.0.1:8080"
    )
    env = UpOptions(port_base=9000, web=False).environment()
    assert env["TOBE_FACE__WEB__ENABLED"] == "false"
    assert "TOBE_FACE__WEB__LISTEN" not in env


def test_web_port_and_no_web_together_are_refused_before_anything_starts(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["up", "--data-dir", str(tmp_path / "data"), "--web-port", "8080", "--no-web"],
        env={"TOBE_CONFIG": str(tmp_path / "absent.toml")},
    )
    assert result.exit_code == 2
    assert "--web-port and --no-web contradict each other" in result.output
    assert not (tmp_path / "data").exists()


def test_the_web_client_is_checked_before_the_start_unless_it_is_off(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    plans = plan_services(settings, ALL, LocalTls())
    assert listeners(plans) == ["mind", "face", "web", "awareness"]
    assert [plan.also_publishes for plan in plans if plan.name == "face"] == [("web",)]
    settings.face.web.enabled = False
    assert listeners(plan_services(settings, ALL, LocalTls())) == ["mind", "face", "awareness"]


def test_provider_model_verbose_and_data_dir_become_their_settings(tmp_path: Path) -> None:
    options = UpOptions(data_dir=tmp_path, provider="openai", model="m-1", verbose=True)
    assert options.environment() == {
        "TOBE_DATA_DIR": str(tmp_path.resolve()),
        "TOBE_PROVIDER__KIND": "openai",
        "TOBE_PROVIDER__MODEL": "m-1",
        "TOBE_LOG_LEVEL": "DEBUG",
    }


def waves(settings: Settings) -> dict[str, tuple[str, ...]]:
    return {plan.name: plan.after for plan in plan_services(settings, ALL, LocalTls())}


def test_awareness_and_the_mind_start_together_then_face_and_the_hand(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert waves(settings) == {
        "awareness": (),
        "mind": (),
        "face": ("mind",),
        "hand": ("mind",),
    }


def test_the_mind_waits_for_awareness_only_when_awareness_picks_its_port(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    settings.awareness.listen = "127.0.0.1:0"
    assert waves(settings)["mind"] == ("awareness",)


def test_the_banner_chat_names_the_data_directory_and_an_address_only_when_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert chat_command((tmp_path / "xdg" / "tobe").resolve()) == "tobe chat"
    spaced = tmp_path / "my data"
    assert chat_command(spaced, address="127.0.0.1:9020") == (
        f"TOBE_DATA_DIR='{spaced}' tobe chat --address 127.0.0.1:9020"
    )
    config = tmp_path / "config.toml"
    monkeypatch.setenv("TOBE_CONFIG", str(config))
    assert not config_names_face_listen()
    config.write_text('[face]\nlisten = "127.0.0.1:7999"\n')
    assert config_names_face_listen()
