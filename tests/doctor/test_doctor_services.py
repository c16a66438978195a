"""`tobe doctor`'s `services` check believes only a `tobe up` that still runs: the record a killed
one left behind, whose pid is gone or now an unrelated process's, is ignored.

What a running `tobe up` left stopped is proven end to end in tests/up/test_up_restarts.py
(test_a_service_that_keeps_failing_is_left_stopped_and_the_rest_keep_serving), which runs this
doctor beside a real `tobe up`."""

from __future__ import annotations

import subprocess
from pathlib import Path

from doctor_run import doctor_env, run_doctor

from management.up_state import StoppedService, UpState, write_state


def _record(data_dir: Path, pid: int) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    stopped = StoppedService("face", "failed 5 times within 60 s", True, "boom", "face.log")
    write_state(data_dir, UpState(pid, ["mind", "face"], [stopped]))


def test_the_record_of_a_tobe_up_that_no_longer_runs_is_ignored(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = doctor_env(data_dir, tmp_path / "none.toml")
    skipped = [f"skip no `tobe up` supervises services on {data_dir}"]
    assert run_doctor(env)[1]["services"] == skipped

    finished = subprocess.Popen(["true"])
    finished.wait()
    _record(data_dir, finished.pid)
    assert run_doctor(env)[1]["services"] == skipped

    # Its pid taken by a process that is not ToBe's.
    with subprocess.Popen(["sleep", "60"]) as other:
        try:
            _record(data_dir, other.pid)
            assert run_doctor(env)[1]["services"] == skipped
        finally:
            other.kill()
