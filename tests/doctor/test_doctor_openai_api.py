"""`tobe doctor` says where the OpenAI-compatible endpoint is served, or that it is off."""

from __future__ import annotations

from pathlib import Path

from doctor_run import doctor_env, run_doctor, store_settings

from mind.management import provision


def _env(tmp_path: Path, **settings: str) -> dict[str, str | None]:
    data_dir = tmp_path / "data"
    provision(store_settings(data_dir))
    return doctor_env(data_dir, tmp_path / "none.toml", **settings)


def test_doctor_names_the_endpoint_chat_apps_point_at(tmp_path: Path) -> None:
    env = _env(tmp_path, TOBE_FACE__WEB__PUBLIC_URL="https://agent.example/")
    [line] = run_doctor(env)[1]["openai api"]
    assert line.startswith("ok served at https://agent.example/v1 ")


def test_doctor_says_when_the_endpoint_is_off(tmp_path: Path) -> None:
    [off] = run_doctor(_env(tmp_path / "a", TOBE_FACE__WEB__OPENAI_API="false"))[1]["openai api"]
    assert off == "skip face.web.openai_api is off"
    [web_off] = run_doctor(_env(tmp_path / "b", TOBE_FACE__WEB__ENABLED="false"))[1]["openai api"]
    assert web_off.startswith("skip face.web.enabled is off")
