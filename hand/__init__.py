"""Hands: executors on the user's devices that dial the Mind (SDK and the reference Hand).

A custom Hand is a few lines: see `hand.Hand`.
"""

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
