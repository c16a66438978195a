"""`tobe doctor` says when `tobe backup` last archived this data directory and where; it warns
when none was taken, the archive is gone, or it is older than 30 days, with `tobe backup DIR`
(and pg_dump for a PostgreSQL store) as the fix."""

from __future__ import annotations

import json
import stat
import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner
from doctor_run import doctor_env, run_doctor
from helpers.postgres import fresh_postgres_database, postgres_server_url

from management.backup import pg_dump_command
from mind.management import provision
from tobe.cli import main
from tobe.config import Settings

FIX = "— fix: `tobe backup DIR` (a directory on another disk)"


def _backup(env: dict[str, str | None], target: Path) -> None:
    """`tobe backup TARGET`, as a person runs it."""
    result = CliRunner().invoke(main, ["backup", str(target)], env=env)
    assert result.exit_code == 0, result.output


def test_the_last_backup_is_told_with_its_date_and_archive_and_a_missing_or_old_one_warns(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    provision(Settings(data_dir=data_dir, database_url=""))
    # The data directory's own store: the PostgreSQL one is the next test's.
    env = doctor_env(data_dir, tmp_path / "none.toml", TOBE_DATABASE_URL="")
    status, findings = run_doctor(env)
    assert findings["backup"] == [f"warn none was ever taken of {data_dir} {FIX}"]
    assert status == 0

    backups = tmp_path / "backups"
    backups.mkdir()
    _backup(env, backups)
    [archive] = backups.glob("tobe-backup-*.tar.gz")
    record = data_dir / "backup.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    with tarfile.open(archive) as tar:
        assert "data/backup.json" not in tar.getnames()
    today = datetime.now(UTC).strftime("%Y-%m-%d")

    [line] = run_doctor(env)[1]["backup"]
    assert line.startswith(f"ok last taken {today} ")
    assert line.endswith(f" UTC (today) to {archive}")

    # A month and more later.
    old = json.loads(record.read_text())
    old["taken_at"] = (datetime.now(UTC) - timedelta(days=31, hours=1)).isoformat()
    record.write_text(json.dumps(old))
    [line] = run_doctor(env)[1]["backup"]
    assert line.startswith("warn last taken ")
    assert line.endswith(f" (31 days ago) to {archive}: older than 30 days {FIX}")

    # A fresh one elsewhere is what counts; then that archive is deleted.
    again = tmp_path / "again.tar.gz"
    _backup(env, again)
    assert run_doctor(env)[1]["backup"][0].endswith(f"(today) to {again}")
    again.unlink()
    [line] = run_doctor(env)[1]["backup"]
    assert line.endswith(f"(today) to {again}, which no longer exists {FIX}")


def test_a_postgresql_store_is_told_to_be_backed_up_with_pg_dump_too(tmp_path: Path) -> None:
    with fresh_postgres_database(postgres_server_url()) as url:
        env = doctor_env(tmp_path / "data", tmp_path / "none.toml", TOBE_DATABASE_URL=url)
        [line] = run_doctor(env)[1]["backup"]
    assert line == (
        f"warn none was ever taken of {tmp_path / 'data'} — fix: `tobe backup DIR` (a directory "
        f"on another disk), and back up the PostgreSQL store with {pg_dump_command(url)}"
    )
