"""Fixtures for Face's end-to-end tests: a scripted Mind process and Face in front of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.face_process import FaceProcess, running_face
from helpers.gateway_script import SCRIPT
from helpers.mind_process import MindProcess, running_mind


@pytest.fixture
def script_path(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT)
    return path


@pytest.fixture
def mind(tmp_path: Path, script_path: Path) -> Iterator[MindProcess]:
    with running_mind(tmp_path, script=script_path) as process:
        yield process


@pytest.fixture
def face(mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(mind) as process:
        yield process
