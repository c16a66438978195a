"""`tobe admin widget-types` against a running Mind (over its socket) and offline (in-process
under the state lock): the same service answers, refusals are one line and change nothing."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.admin_cli import Admin
from helpers.mind_process import running_mind
from trip_type import NOTE, PAGE, STOP, TRIP, document

pytestmark = pytest.mark.e2e


@pytest.fixture
def root() -> Iterator[Path]:
    # Short, so the Management socket's path stays below the Unix limit.
    path = Path(tempfile.mkdtemp(prefix="twt-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _files(root: Path, schema_text: str, page: bytes = PAGE) -> tuple[str, str]:
    schema_file, page_file = root / "schema.json", root / "page.html"
    schema_file.write_text(schema_text, encoding="utf-8")
    page_file.write_bytes(page)
    return str(schema_file), str(page_file)


def _put(admin: Admin, root: Path, schema_text: str, *extra: str) -> dict[str, object]:
    schema_file, page_file = _files(root, schema_text)
    put: dict[str, object] = admin.json(
        "widget-types", "put", "trip", "--schema", schema_file, "--page", page_file, *extra
    )
    return put


def _refused(admin: Admin, root: Path, schema_text: str, page: bytes = PAGE) -> str:
    schema_file, page_file = _files(root, schema_text, page)
    result = admin.run(
        "widget-types", "put", "trip", "--schema", schema_file, "--page", page_file, ok=False
    )
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def _lifecycle(admin: Admin, root: Path) -> None:
    first = _put(admin, root, TRIP)
    second = _put(admin, root, document(stops=STOP, notes=NOTE, extra=NOTE))
    no_description = _refused(admin, root, document(stops={"schema": {"type": "object"}}))
    bad_schema = _refused(
        admin, root, document(stops={"description": "Stops.", "schema": {"type": 5}})
    )
    bad_page = _refused(admin, root, TRIP, b"\xff\xfe")
    listed = admin.json("widget-types", "list")
    shown = admin.json("widget-types", "show", "trip")
    table = admin.run("widget-types", "show", "trip").stdout
    deleted = admin.json("widget-types", "delete", "trip")
    audited = [e["details"] for e in admin.json("audit", "--action", "widget_type.")]

    assert (first["version"], second["version"]) == (1, 2)
    assert no_description == (
        "Error: module 'stops' has no description: give one sentence for the model"
    )
    assert "module 'stops''s schema is not valid JSON Schema at type" in bad_schema
    assert bad_page == "Error: the page is not UTF-8 (byte 0)"
    assert [(t["name"], t["version"], t["widgets"]) for t in listed] == [("trip", 2, 0)]
    assert [m["name"] for m in shown["modules"]] == ["stops", "notes", "extra"]
    assert shown["modules"][0]["schema"] == STOP["schema"]
    assert shown["modules"][0]["description"] == STOP["description"]
    assert shown["page"] == PAGE.decode() and shown["page_bytes"] == len(PAGE)
    assert "place, nights?" in table and "One stop of the trip" in table
    assert deleted == {"name": "trip", "widgets_removed": 0}
    assert admin.json("widget-types", "list") == []
    assert "No widget types" in admin.run("widget-types", "list").stdout
    assert admin.run("widget-types", "show", "trip", ok=False).output.strip() == (
        "Error: no widget type 'trip' (list them with `tobe admin widget-types list`)"
    )
    assert audited == [
        {"widgets_removed": 0},
        {"version": 2, "modules": ["stops", "notes", "extra"], "removed_modules": []},
        {"version": 1, "modules": ["stops", "notes"], "removed_modules": []},
    ]


def test_the_operator_manages_widget_types_offline(root: Path) -> None:
    admin = Admin(root / "data")
    (root / "data").mkdir()
    assert "mode: offline" in admin.run("--verbose", "widget-types", "list").stderr
    _lifecycle(admin, root)


def test_the_operator_manages_widget_types_through_the_running_mind(root: Path) -> None:
    with running_mind(root, script=None) as mind:
        admin = Admin(mind.data_dir)
        assert "mode: online" in admin.run("--verbose", "widget-types", "list").stderr
        _lifecycle(admin, root)


def test_a_schema_file_that_is_not_json_is_refused_in_one_line(root: Path) -> None:
    admin = Admin(root / "data")
    (root / "data").mkdir()
    line = _refused(admin, root, json.dumps({"modules": {"stops": STOP}})[:-1])
    assert line.startswith("Error: the schema document is not JSON:")
    assert admin.json("widget-types", "list") == []
