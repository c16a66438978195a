"""Face in `tobe admin status` and `tobe health --all`: every service of a data directory,
found where `address_of` says (here: published in runtime.json), with its health."""

from __future__ import annotations

import logging
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers.admin_cli import Admin
from helpers.face_process import FaceProcess
from helpers.mind_process import MindProcess

from tobe.cli import main
from tobe.runtime.addresses import publish, withdraw

pytestmark = pytest.mark.e2e


def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


@pytest.fixture
def published(stack: tuple[MindProcess, FaceProcess]) -> Iterator[Path]:
    """A data directory whose runtime file names the shared stack's Mind and Face."""
    mind, face = stack
    data_dir = Path(tempfile.mkdtemp(prefix="thl-"))
    publish(data_dir, "mind", mind.address)
    publish(data_dir, "face", face.address)
    try:
        yield data_dir
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def health(data_dir: Path, *args: str) -> Result:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        return CliRunner().invoke(
            main,
            ["health", *args],
            env={"TOBE_DATA_DIR": str(data_dir), "TOBE_CONFIG": str(data_dir / "absent.toml")},
        )
    finally:
        root.handlers[:], root.level = handlers, level


def test_status_shows_face_serving_where_it_published(
    stack: tuple[MindProcess, FaceProcess],
) -> None:
    mind, face = stack
    admin = Admin(mind.data_dir)
    publish(mind.data_dir, "face", face.address)
    try:
        status = admin.json("status")
        shown = admin.run("status").stdout
    finally:
        withdraw(mind.data_dir, "face")
    assert status["mode"] == "online"
    assert status["face"] == {"address": face.address, "status": "SERVING", "detail": ""}
    assert f"serving at {face.address}" in shown


def test_status_says_an_unreachable_face_is_unreachable(admin: Admin) -> None:
    gone = closed_port()
    publish(admin.data_dir, "face", gone)
    status = admin.json("status")
    assert status["face"]["status"] == "UNREACHABLE"
    assert status["face"]["detail"].startswith("UNAVAILABLE")
    assert f"unreachable at {gone} (UNAVAILABLE" in admin.run("status").stdout


def test_status_shows_the_web_client_face_published_with_its_health(admin: Admin) -> None:
    assert "web" not in admin.json("status")
    gone = closed_port()
    publish(admin.data_dir, "web", gone)
    try:
        status = admin.json("status")
        shown = admin.run("status").stdout
    finally:
        withdraw(admin.data_dir, "web")
    assert status["web"]["url"] == f"http://{gone}/"
    assert status["web"]["status"] == "UNREACHABLE"
    assert status["web"]["detail"].startswith("ConnectError: ")
    assert f"unreachable at http://{gone}/ (ConnectError" in shown


def test_health_all_checks_every_service_of_the_data_directory(published: Path) -> None:
    result = health(published, "--all", "--data-dir", str(published))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["mind", "face"]
    assert all(line.split()[2] == "SERVING" for line in lines)


def test_health_all_fails_when_any_service_does_not_answer(published: Path) -> None:
    publish(published, "awareness", closed_port())
    publish(published, "web", closed_port())
    # A socket file left by a Hand that is gone: present, so checked, and unreachable.
    (published / "hand-health.sock").touch()
    result = health(published, "--all")
    assert result.exit_code == 1, result.output
    states = {line.split()[0]: line.split()[2] for line in result.stdout.splitlines()}
    assert states == {
        "mind": "SERVING",
        "face": "SERVING",
        "web": "UNREACHABLE",
        "awareness": "UNREACHABLE",
        "hand": "UNREACHABLE",
    }


def test_health_needs_a_target_or_all(published: Path) -> None:
    result = health(published)
    assert result.exit_code == 2
    assert "pass either --target ADDRESS or --all" in result.output
