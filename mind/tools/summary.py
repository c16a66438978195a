"""Secret-free summaries of tool arguments and results (what SUMMARY viewers see)."""

from __future__ import annotations

from typing import Any

PROJECTION_VERSION = 1


def _shape(value: Any) -> str:
    if isinstance(value, str):
        return f"<{len(value)} chars>"
    if isinstance(value, bool):
        return "<bool>"
    if isinstance(value, int | float):
        return "<number>"
    if isinstance(value, dict):
        return f"<object of {len(value)} keys>"
    if isinstance(value, list):
        return f"<list of {len(value)} items>"
    if value is None:
        return "<null>"
    return "<value>"


def summarize_arguments(arguments: dict[str, Any] | None, raw: str = "") -> str:
    """`key=<shape>, …`: names and sizes, never values (e.g. `path=<12 chars>, mode=<str>`)."""
    if arguments is None:
        return f"<unparseable arguments, {len(raw)} chars>"
    if not arguments:
        return "<no arguments>"
    return ", ".join(f"{key}={_shape(value)}" for key, value in arguments.items())


def argument_projection(
    arguments: dict[str, Any] | None, raw: str, transparent: bool
) -> dict[str, Any]:
    """Versioned argument projection: raw arguments only for TRANSPARENT admissions."""
    projection: dict[str, Any] = {
        "version": PROJECTION_VERSION,
        "keys": sorted(arguments) if arguments else [],
    }
    if transparent:
        projection["arguments_json"] = raw
    return projection


def summarize_result(status: str, text: str, images: int = 0) -> str:
    """Status and size of a result, and how many images came with it; never its content."""
    summary = f"{status}, {len(text)} chars"
    if images:
        summary += f", {images} image{'s' if images > 1 else ''}"
    return summary
