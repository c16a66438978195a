"""Adapter configuration: atomic first copy, schema validation, and hiding sensitive values.

The tracked `config.default.json` and `config.schema.json` live in the adapter's code directory
(which may be read-only); the instance `config.json` lives in its instance directory under the
Awareness data directory (`awareness.instances`). `config.json` is created from the default
once and whole (`tobe.runtime.private_files.create_once`), so concurrent first instantiations
never see a partial file and never overwrite each other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema

from awareness.errors import ConfigError

# MASK stays importable from here for the scrubber, which masks with the same text.
from awareness.sensitive import MASK as MASK
from awareness.sensitive import check_schema, masked, sensitive_texts
from tobe.runtime.private_files import create_once

DEFAULT_FILE = "config.default.json"
SCHEMA_FILE = "config.schema.json"
INSTANCE_FILE = "config.json"


def ensure_config(code_dir: Path, instance_dir: Path) -> Path:
    """Create the instance `config.json` from the code's default when missing; return its path."""
    target = instance_dir / INSTANCE_FILE
    if target.exists():
        return target
    default = code_dir / DEFAULT_FILE
    if not default.is_file():
        raise ConfigError(f"adapter {code_dir.name!r} has no {DEFAULT_FILE}")
    create_once(target, default.read_bytes())
    return target


def load_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{what} {path.name} is missing") from None
    except json.JSONDecodeError as exc:
        # The position only: the offending text may be a secret.
        raise ConfigError(
            f"{what} {path.name} is not valid JSON (line {exc.lineno}, column {exc.colno})"
        ) from None


def load_config(code_dir: Path, instance_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return (config, schema) of an adapter, creating and validating its `config.json`."""
    schema = load_json(code_dir / SCHEMA_FILE, "schema")
    config = load_json(ensure_config(code_dir, instance_dir), "config")
    validate(config, schema)
    return config, schema


def validate(config: Any, schema: dict[str, Any]) -> None:
    """Raise ConfigError naming the first invalid field, never quoting its value.

    An invalid schema, or one referring outside itself, is an AdapterLoadError.
    """
    check_schema(schema, SCHEMA_FILE)
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is None:
        return
    raise ConfigError(f"config.json: {describe_error(error)}")


def describe_error(error: jsonschema.ValidationError) -> str:
    """A message naming the field and the rule it breaks, built without the instance value."""
    field = "/".join(str(p) for p in error.absolute_path) or "(root)"
    rule, expected = error.validator, error.validator_value
    # `required` and `additionalProperties` judge a JSON object against a schema object.
    instance = error.instance if isinstance(error.instance, dict) else {}
    if rule == "required" and isinstance(expected, list):
        missing = [name for name in expected if name not in instance]
        names = ", ".join(f"{field}/{m}" if field != "(root)" else m for m in missing)
        return f"field {names} is required"
    if rule == "additionalProperties" and isinstance(error.schema, Mapping):
        extra = sorted(set(instance) - set(error.schema.get("properties", {})))
        return f"field {field}: unknown field(s) {', '.join(extra)}"
    if rule == "type":
        return f"field {field} must be of type {expected}"
    if rule == "enum" and isinstance(expected, list):
        return f"field {field} must be one of {', '.join(map(str, expected))}"
    if isinstance(expected, (bool, int, float, str)):
        return f"field {field} breaks the rule {rule}={expected}"
    return f"field {field} breaks the rule {rule}"


def sensitive_values(config: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The string forms of every sensitive value, for scrubbing text."""
    return [text for text in sensitive_texts(config, schema) if text]


def redacted(config: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of the config with every sensitive value replaced by a mask."""
    shown: dict[str, Any] = masked(config, schema)
    return shown
