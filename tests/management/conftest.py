"""Fixtures of the management tests: a short data directory, its `tobe admin`, and a shared
running Mind with a Face in front for the online tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.admin_cli import Admin
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, running_mind


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Short, so the Unix socket path inside stays well below the 107-byte limit.
    path = Path(tempfile.mkdtemp(prefix="tadm-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def admin(data_dir: Path) -> Admin:
    return Admin(data_dir)


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MindProcess, FaceProcess]]:
    """One running Mind with a Face in front, shared by the online tests (each uses its own
    principals). `running_mind` issues a gateway credential and clients alice and bob."""
    base = Path(tmp_path_factory.mktemp("online", numbered=True))
    with running_mind(base, script=None) as mind, running_face(mind) as face:
        yield mind, face
