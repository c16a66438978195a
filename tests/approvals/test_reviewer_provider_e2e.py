"""The Reviewer's own provider (`[approvals.reviewer.provider]`) is built like the Mind's: with
the key `tobe setup` stored when none is configured, and refused in one line when it is wrong."""

from __future__ import annotations

from pathlib import Path

from helpers.mind_process import MindProcess, mind_env, run_mind_command, store_url

from mind.credentials.provider_keys import MAIN, offline_keys
from mind.store.migrate import upgrade
from tobe.config import load_settings
from tobe.provider_detect import DEMO_SCRIPT

KEY = "sk-ant-stored-4242"


def _reviewer_env(data_dir: Path) -> dict[str, str]:
    return mind_env(
        data_dir,
        DEMO_SCRIPT,
        TOBE_APPROVALS__REVIEWER__ENABLED="true",
        TOBE_APPROVALS__REVIEWER__PROVIDER__KIND="anthropic",
        TOBE_APPROVALS__REVIEWER__PROVIDER__MODEL="claude-sonnet-4-5",
        TOBE_APPROVALS__REVIEWER__PROVIDER__BASE_URL="http://127.0.0.1:9",
    )


def test_the_reviewers_own_provider_uses_the_key_tobe_setup_stored(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    url = store_url(data_dir)
    upgrade(url)
    with offline_keys(load_settings(data_dir=data_dir, database_url=url)) as keys:
        keys.put(MAIN, "anthropic", KEY, actor="test")
    mind = MindProcess(data_dir, _reviewer_env(data_dir), "", {})
    try:
        mind.start()
        assert mind.address
    finally:
        mind.kill()
    assert not any(KEY in line for line in mind.output)


def test_a_reviewer_provider_without_a_key_stops_the_start_in_one_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    env = _reviewer_env(data_dir)
    for variable in ("ANTHROPIC_API_KEY", "TOBE_PROVIDER__API_KEY"):
        env.pop(variable, None)
    result = run_mind_command(env)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert errors == [
        "Error: cannot start the Mind: [approvals.reviewer] provider: provider 'anthropic' "
        "needs an API key: store one with `tobe setup`, or set TOBE_PROVIDER__API_KEY or "
        "ANTHROPIC_API_KEY"
    ]
    assert "Traceback" not in result.stderr
