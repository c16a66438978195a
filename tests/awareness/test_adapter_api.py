"""The adapter authors' API is a contract: its export list changes only on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest

import awareness.adapter as api
from awareness.errors import DataPathError


def test_public_adapter_api_is_pinned():
    assert sorted(api.__all__) == [
        "Action",
        "ActionFailed",
        "Actor",
        "Adapter",
        "AdapterContext",
        "Effect",
        "MediaInput",
        "Trust",
    ]


def test_data_path_refuses_symlinks_that_lead_outside(tmp_path: Path):
    context = api.AdapterContext(
        adapter_id="a-1",
        adapter_name="a",
        directory=tmp_path / "code",
        instance_dir=tmp_path,
        config={},
        emitter=lambda **_: "",
        failure_reporter=lambda _: None,
    )
    context.data_path().mkdir(exist_ok=True)
    (tmp_path / "data" / "out").symlink_to(tmp_path)
    with pytest.raises(DataPathError):
        context.data_path("out", "escape.txt")
    assert context.data_path("inside", "ok.txt") == (tmp_path / "data" / "inside" / "ok.txt")
