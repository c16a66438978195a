"""Hands: executors on the user's devices that dial the Mind (SDK and the reference Hand).

A custom Hand is a few lines: see `hand.Hand`. The SDK's names are loaded on first use, so a
program that needs one module of this package alone (`tobe up` asks `hand.sandbox` whether the
command sandbox runs here) does not load the SDK with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hand._conformance import add_conformance_tools
    from hand._hand import Hand, HandRefused, Offer, Policy
    from hand._progress import report_progress
    from hand._tls import client_tls
    from hand._tools import (
        Effect,
        InvalidArguments,
        SchemaTool,
        Tool,
        ToolError,
        ToolFunction,
        ToolOutput,
    )
    from tobe.runtime.tls import ClientTls, TlsConfigError

__all__ = [
    "ClientTls",
    "Effect",
    "Hand",
    "HandRefused",
    "InvalidArguments",
    "Offer",
    "Policy",
    "SchemaTool",
    "TlsConfigError",
    "Tool",
    "ToolError",
    "ToolFunction",
    "ToolOutput",
    "add_conformance_tools",
    "client_tls",
    "report_progress",
]

# Each public name -> the module that defines it.
_SOURCES = {
    "add_conformance_tools": "hand._conformance",
    **dict.fromkeys(("Hand", "HandRefused", "Offer", "Policy"), "hand._hand"),
    "report_progress": "hand._progress",
    "client_tls": "hand._tls",
    **dict.fromkeys(
        (
            "Effect",
            "InvalidArguments",
            "SchemaTool",
            "Tool",
            "ToolError",
            "ToolFunction",
            "ToolOutput",
        ),
        "hand._tools",
    ),
    **dict.fromkeys(("ClientTls", "TlsConfigError"), "tobe.runtime.tls"),
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    if name not in _SOURCES:
        raise AttributeError(f"module 'hand' has no attribute {name!r}")
    value = getattr(importlib.import_module(_SOURCES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
