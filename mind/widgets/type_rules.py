"""What a widget type must be: a name, a schema document of described modules whose schemas
are valid JSON Schema (draft 2020-12), and one bounded UTF-8 HTML page.

Every refusal is one line naming what to fix, raised before anything is stored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from mind.errors import InvalidInput

TYPE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
MODULE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
MAX_SCHEMA_BYTES = 256 * 1024
MAX_PAGE_BYTES = 512 * 1024
MAX_MODULES = 32
MAX_DESCRIPTION = 500


@dataclass(frozen=True)
class WidgetModule:
    """One module of a type: what the model is told about it, and the schema of one record."""

    name: str
    description: str
    schema: dict[str, Any]

    def to_document(self) -> dict[str, Any]:
        return {"description": self.description, "schema": self.schema}


def check_type_name(name: str) -> str:
    if not TYPE_NAME.fullmatch(name):
        raise InvalidInput(
            f"widget type name {name!r} is not valid: use 1 to 64 lowercase letters, digits, "
            "'_' or '-', starting with a letter"
        )
    return name


def check_module_name(name: str) -> str:
    if not MODULE_NAME.fullmatch(name):
        raise InvalidInput(
            f"module name {name!r} is not valid: use 1 to 64 lowercase letters, digits or '_', "
            "starting with a letter"
        )
    return name


def _module(name: str, entry: Any) -> WidgetModule:
    from jsonschema import Draft202012Validator  # loaded by the first widget type checked
    from jsonschema.exceptions import SchemaError

    check_module_name(name)
    if not isinstance(entry, dict):
        raise InvalidInput(f"module {name!r} must be an object with description and schema")
    description = entry.get("description")
    if not isinstance(description, str) or not description.strip():
        raise InvalidInput(f"module {name!r} has no description: give one sentence for the model")
    if len(description) > MAX_DESCRIPTION:
        raise InvalidInput(
            f"module {name!r}'s description is {len(description)} characters; "
            f"at most {MAX_DESCRIPTION} are allowed"
        )
    schema = entry.get("schema")
    if not isinstance(schema, dict):
        raise InvalidInput(f"module {name!r} has no schema: give a JSON Schema object")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        where = "/".join(str(part) for part in error.path) or "(root)"
        raise InvalidInput(
            f"module {name!r}'s schema is not valid JSON Schema at {where}: "
            f"{error.message.splitlines()[0]}"
        ) from None
    unknown = set(entry) - {"description", "schema"}
    if unknown:
        raise InvalidInput(
            f"module {name!r} has unknown fields {sorted(unknown)}: only description and schema"
        )
    return WidgetModule(name, description.strip(), schema)


def parse_modules(document: dict[str, Any]) -> dict[str, WidgetModule]:
    """The modules of a stored (already checked) document, in the document's order."""
    return {
        name: WidgetModule(name, entry["description"], entry["schema"])
        for name, entry in document["modules"].items()
    }


def check_schema_document(text: str) -> dict[str, WidgetModule]:
    """The modules of a schema document `{"modules": {NAME: {description, schema}}}`."""
    if len(text.encode()) > MAX_SCHEMA_BYTES:
        raise InvalidInput(f"the schema document is larger than {MAX_SCHEMA_BYTES} bytes")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInput(f"the schema document is not JSON: {error}") from None
    if not isinstance(document, dict) or set(document) != {"modules"}:
        raise InvalidInput('the schema document must be {"modules": {NAME: {...}, ...}}')
    modules = document["modules"]
    if not isinstance(modules, dict) or not modules:
        raise InvalidInput("the schema document must name at least one module")
    if len(modules) > MAX_MODULES:
        raise InvalidInput(f"a widget type has at most {MAX_MODULES} modules, got {len(modules)}")
    return {name: _module(name, entry) for name, entry in modules.items()}


def check_page(page: bytes) -> str:
    """The page as text: one UTF-8 HTML file of bounded size."""
    if not page.strip():
        raise InvalidInput("the page is empty: give the type's HTML page")
    if len(page) > MAX_PAGE_BYTES:
        raise InvalidInput(f"the page is {len(page)} bytes; at most {MAX_PAGE_BYTES} are allowed")
    try:
        return page.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidInput(f"the page is not UTF-8 (byte {error.start})") from None
