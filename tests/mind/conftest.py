"""Fixtures for the Mind's end-to-end tests: a scripted Mind process and a gateway client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.mind_gateway import SCRIPT, Gateway
from helpers.mind_process import MindProcess, running_mind


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory, module_store: str) -> Iterator[MindProcess]:
    """A Mind of this module alone: its tests may kill and restart it (on `module_store`)."""
    root = tmp_path_factory.mktemp("mind")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(root, script=script) as process:
        yield process


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    client = Gateway.connect(mind)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def shared_mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MindProcess]:
    """One Mind for the tests that never kill it (keeps the suite fast)."""
    root = tmp_path_factory.mktemp("shared-mind")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(root, script=script) as process:
        yield process


@pytest.fixture
def shared(shared_mind: MindProcess) -> Iterator[Gateway]:
    client = Gateway.connect(shared_mind)
    try:
        yield client
    finally:
        client.close()
