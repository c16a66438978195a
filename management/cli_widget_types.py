"""`tobe admin widget-types …`: the widget types the model may build widgets of (a schema
document of modules and one HTML page each), versioned by the Mind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from management.cli_support import call, output_options, printer
from management.render import human_time
from tobe.v1 import management_pb2 as pb

_FILE = click.Path(exists=True, dir_okay=False, readable=True, path_type=Path)


def _module(message: pb.WidgetTypeModule) -> dict[str, Any]:
    return {
        "name": message.name,
        "description": message.description,
        "schema": json.loads(message.schema_json),
    }


def _widget_type(message: pb.WidgetTypeInfo) -> dict[str, Any]:
    created = message.created_at.ToDatetime().isoformat() + "Z"
    return {
        "name": message.name,
        "version": message.version,
        "modules": [_module(module) for module in message.modules],
        "page_bytes": message.page_bytes,
        "created_at": created,
        "widgets": message.widgets,
    }


def _fields(schema: dict[str, Any]) -> str:
    """A record's top-level fields, for people: `name, date?` (? for an optional one)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return str(schema.get("type", "any"))
    required = set(schema.get("required") or ())
    return ", ".join(name if name in required else f"{name}?" for name in properties)


def _print_types(items: list[dict[str, Any]]) -> None:
    table = Table(show_edge=False, pad_edge=False)
    for column in ("TYPE", "VERSION", "MODULES", "WIDGETS", "CREATED"):
        table.add_column(column, overflow="fold")
    for item in items:
        modules = ", ".join(module["name"] for module in item["modules"])
        cells = (
            item["name"],
            str(item["version"]),
            modules,
            str(item["widgets"]),
            human_time(item["created_at"]),
        )
        table.add_row(*(Text(cell) for cell in cells))
    printer().console.print(table)


def _print_modules(item: dict[str, Any]) -> None:
    table = Table(show_edge=False, pad_edge=False)
    for column in ("MODULE", "FIELDS", "DESCRIPTION"):
        table.add_column(column, overflow="fold")
    for module in item["modules"]:
        cells = (module["name"], _fields(module["schema"]), module["description"])
        table.add_row(*(Text(cell) for cell in cells))
    printer().console.print(table)


@click.group("widget-types")
def widget_types() -> None:
    """Widget types: what the model may build widgets of, and the page that shows them."""


@widget_types.command()
@click.argument("name")
@click.option("--schema", "schema_file", type=_FILE, required=True, help="The schema document.")
@click.option("--page", "page_file", type=_FILE, required=True, help="The type's HTML page.")
@click.option("--force", is_flag=True, help="Let a type in use lose modules.")
@output_options
def put(name: str, schema_file: Path, page_file: Path, force: bool) -> None:
    """Store a new version of widget type NAME (audited).

    The schema document is {"modules": {MODULE: {"description": "<one sentence for the
    model>", "schema": <JSON Schema, draft 2020-12, of one record>}}}; the page is one UTF-8
    HTML file. A type with widgets keeps its modules unless --force.
    """
    try:
        schema_text = schema_file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise click.ClickException(f"{schema_file} is not UTF-8 text") from None
    request = pb.PutWidgetTypeRequest(
        name=name, schema_json=schema_text, page=page_file.read_bytes(), force=force
    )
    response = call("PutWidgetType", request)
    item = _widget_type(response.widget_type)
    item["removed_modules"] = list(response.removed_modules)
    out = printer()
    if out.as_json:
        return out.json(item)
    dropped = f"; dropped {', '.join(item['removed_modules'])}" if item["removed_modules"] else ""
    out.console.print(
        Text(f"Stored widget type {item['name']} version {item['version']}{dropped}.")
    )


@widget_types.command("list")
@output_options
def list_() -> None:
    """List the widget types (their current versions), sorted by name."""
    response = call("ListWidgetTypes", pb.ListWidgetTypesRequest())
    items = [_widget_type(message) for message in response.widget_types]
    out = printer()
    if out.as_json:
        return out.json(items)
    if not items:
        out.console.print("No widget types (add one with `tobe admin widget-types put`).")
        return
    _print_types(items)


@widget_types.command()
@click.argument("name")
@output_options
def show(name: str) -> None:
    """Show widget type NAME's current version: its modules with their fields (--json: with
    their schemas and the page)."""
    response = call("GetWidgetType", pb.GetWidgetTypeRequest(name=name))
    item = _widget_type(response.widget_type)
    out = printer()
    if out.as_json:
        return out.json({**item, "page": response.page})
    out.console.print(
        Text(
            f"Widget type {item['name']} version {item['version']}: {item['widgets']} widget(s), "
            f"page {item['page_bytes']} bytes"
        )
    )
    _print_modules(item)


@widget_types.command()
@click.argument("name")
@click.option("--force", is_flag=True, help="Delete it even with widgets (they go with it).")
@output_options
def delete(name: str, force: bool) -> None:
    """Delete widget type NAME and all its versions (audited); refused while widgets of it
    exist, unless --force."""
    response = call("DeleteWidgetType", pb.DeleteWidgetTypeRequest(name=name, force=force))
    item = {"name": name, "widgets_removed": response.widgets_removed}
    out = printer()
    if out.as_json:
        return out.json(item)
    also = f" and its {response.widgets_removed} widget(s)" if response.widgets_removed else ""
    out.console.print(Text(f"Deleted widget type {name}{also}."))
