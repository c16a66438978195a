"""config.json creation, validation and redaction (engine-side functions, real processes)."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

import pytest
from awareness_harness import PROBE

from awareness.config_files import ensure_config, load_config, redacted, sensitive_values
from awareness.errors import AdapterLoadError, ConfigError

WORKERS = 8


def _instantiate(
    directory: str, instance: str, start: multiprocessing.synchronize.Event, out
) -> None:
    start.wait()
    path = ensure_config(Path(directory), Path(instance))
    out.put(path.read_text())


def test_concurrent_first_instantiations_create_config_atomically(tmp_path: Path):
    # A large default makes a torn (partially written) file observable if creation weren't atomic.
    directory = tmp_path / "probe"
    shutil.copytree(PROBE, directory, ignore=shutil.ignore_patterns("config.json", "data"))
    default = json.loads((directory / "config.default.json").read_text())
    default["greeting"] = "x" * 1_000_000
    (directory / "config.default.json").write_text(json.dumps(default))
    expected = (directory / "config.default.json").read_text()
    instance = tmp_path / "instance"
    instance.mkdir()

    context = multiprocessing.get_context("fork")
    start, out = context.Event(), context.Queue()
    workers = [
        context.Process(target=_instantiate, args=(str(directory), str(instance), start, out))
        for _ in range(WORKERS)
    ]
    for worker in workers:
        worker.start()
    start.set()
    seen = [out.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    assert seen == [expected] * WORKERS
    assert (instance / "config.json").read_text() == expected
    assert sorted(p.name for p in instance.iterdir()) == ["config.json"]


def test_existing_config_is_never_overwritten(tmp_path: Path):
    directory = tmp_path / "probe"
    shutil.copytree(PROBE, directory, ignore=shutil.ignore_patterns("config.json", "data"))
    (tmp_path / "config.json").write_text('{"api_key": "mine-12345678", "greeting": "hi"}')
    ensure_config(directory, tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["greeting"] == "hi"


def test_invalid_sensitive_value_is_named_but_never_quoted(tmp_path: Path):
    directory = tmp_path / "probe"
    shutil.copytree(PROBE, directory, ignore=shutil.ignore_patterns("config.json", "data"))
    (tmp_path / "config.json").write_text('{"api_key": "short", "greeting": "hi"}')
    with pytest.raises(ConfigError) as caught:
        load_config(directory, tmp_path)
    assert "api_key" in str(caught.value)
    assert "short" not in str(caught.value)


def test_redaction_masks_nested_sensitive_values():
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "auth": {
                "type": "object",
                "properties": {"password": {"type": "string", "x-sensitive": True}},
            },
            "tokens": {"type": "array", "items": {"type": "string", "x-sensitive": True}},
        },
    }
    config = {"name": "n", "auth": {"password": "pw-123456"}, "tokens": ["t-aaaa", "t-bbbb"]}
    assert redacted(config, schema) == {
        "name": "n",
        "auth": {"password": "[REDACTED]"},
        "tokens": ["[REDACTED]", "[REDACTED]"],
    }
    assert sorted(sensitive_values(config, schema)) == ["pw-123456", "t-aaaa", "t-bbbb"]
    assert config["auth"]["password"] == "pw-123456"


def test_redaction_and_scrubbed_values_follow_references_and_branches():
    schema = {
        "$defs": {"secret": {"type": "string", "x-sensitive": True}},
        "properties": {
            "password": {"$ref": "#/$defs/secret"},
            "proxy": {
                "anyOf": [{"type": "null"}, {"properties": {"pw": {"$ref": "#/$defs/secret"}}}]
            },
        },
    }
    config = {"password": "pw-123456", "proxy": {"host": "p.test", "pw": "proxy-pw-1"}}
    assert redacted(config, schema) == {
        "password": "[REDACTED]",
        "proxy": {"host": "p.test", "pw": "[REDACTED]"},
    }
    assert sorted(sensitive_values(config, schema)) == ["proxy-pw-1", "pw-123456"]


@pytest.mark.parametrize(
    "schema, problem",
    [
        ({"type": "object", "properties": {"a": {"type": "strin"}}}, "not a valid JSON Schema"),
        ({"properties": {"a": {"$ref": "#/$defs/gone"}}}, "'#/$defs/gone' cannot be resolved"),
    ],
    ids=["invalid", "unresolvable"],
)
def test_a_config_schema_that_cannot_be_followed_refuses_the_adapter(
    tmp_path: Path, schema: dict[str, object], problem: str
):
    directory = tmp_path / "probe"
    shutil.copytree(PROBE, directory, ignore=shutil.ignore_patterns("config.json", "data"))
    (directory / "config.schema.json").write_text(json.dumps(schema))
    with pytest.raises(AdapterLoadError) as caught:
        load_config(directory, tmp_path)
    assert str(caught.value).startswith("config.schema.json")
    assert problem in str(caught.value)
