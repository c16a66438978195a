"""`tobe doctor` says how the running Mind divides a small local model's window."""

from __future__ import annotations

from pathlib import Path

import pytest
from doctor_run import doctor_env, run_doctor, store_settings
from helpers.local_servers import local_server
from helpers.mind_process import running_mind

from mind.management import provision

pytestmark = pytest.mark.e2e


def test_doctor_shows_the_window_and_what_every_request_carries_before_the_conversation(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    provision(store_settings(data_dir))
    with local_server("llama-server", loaded_window=8192) as fake:
        env = {
            "TOBE_PROVIDER__KIND": "openai",
            "TOBE_PROVIDER__MODEL": fake.model,
            "TOBE_PROVIDER__BASE_URL": fake.base_url,
        }
        with running_mind(tmp_path, script=None, clients=(), **env) as mind:
            doctor = doctor_env(data_dir, tmp_path / "none.toml", TOBE_MIND__LISTEN=mind.address)
            _, findings = run_doctor({**doctor, **env})
    [line] = findings["model budget"]
    assert line.startswith(
        f"ok {fake.model}: window 8,192 tokens from llama-server /props "
        "default_generation_settings.n_ctx; 2,048 kept for the reply and 1,024 in reserve; "
        "every request of profile 'default' carries ~"
    ), line
    overhead = int(line.split("carries ~")[1].split(" ")[0].replace(",", ""))
    left = int(line.split("leaving ~")[1].split(" ")[0].replace(",", ""))
    assert overhead > 500 and overhead + left == 8192 - 2048 - 1024
    assert line.endswith("structured output: json_schema")


def test_doctor_leaves_the_budget_to_the_running_mind(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    provision(store_settings(data_dir))
    _, findings = run_doctor(doctor_env(data_dir, tmp_path / "none.toml"))
    assert findings["model budget"] == [
        "skip measured by the running Mind; ToBe is not running on this data directory"
    ]
