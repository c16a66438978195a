"""The runtime file: services publish where they listen, clients find them there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tobe.config import FaceSettings
from tobe.runtime.addresses import address_of, publish, published, runtime_file, withdraw


def test_a_client_dials_the_published_address_unless_one_is_set_explicitly(
    tmp_path: Path,
) -> None:
    publish(tmp_path, "face", "127.0.0.1:9420")
    assert address_of(tmp_path, "face", FaceSettings(), "listen") == "127.0.0.1:9420"
    explicit = FaceSettings(listen="127.0.0.1:7777")
    assert address_of(tmp_path, "face", explicit, "listen") == "127.0.0.1:7777"
    assert address_of(tmp_path, "mind", FaceSettings(), "mind_address") == "127.0.0.1:7410"


def test_entries_of_dead_processes_are_ignored_and_withdraw_keeps_other_processes_entries(
    tmp_path: Path,
) -> None:
    code = (
        "import sys; from pathlib import Path; from tobe.runtime.addresses import publish; "
        "publish(Path(sys.argv[1]), 'mind', '127.0.0.1:9410')"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    assert json.loads(runtime_file(tmp_path).read_text())["services"]["mind"]["address"]
    assert "mind" not in published(tmp_path)  # that process has exited
    publish(tmp_path, "face", "127.0.0.1:9420", ca_file="/tls/ca.pem")
    withdraw(tmp_path, "mind")  # not ours: stays in the file
    assert "mind" in json.loads(runtime_file(tmp_path).read_text())["services"]
    assert published(tmp_path)["face"].ca_file == "/tls/ca.pem"
    assert runtime_file(tmp_path).stat().st_mode & 0o777 == 0o600
    withdraw(tmp_path, "face")
    assert "face" not in published(tmp_path)
    assert os.listdir(tmp_path).count("runtime.json") == 1


def test_a_damaged_runtime_file_reads_as_nothing_published(tmp_path: Path) -> None:
    runtime_file(tmp_path).write_text("{not json")
    assert published(tmp_path) == {}
    publish(tmp_path, "face", "127.0.0.1:9420")
    assert published(tmp_path)["face"].address == "127.0.0.1:9420"
