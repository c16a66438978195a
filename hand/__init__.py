"""Hands: executors on the user's devices that dial the Mind (SDK and the reference Hand).

A custom Hand is a few lines: see `hand.Hand`.
"""

from hand._hand import Hand, HandRefused, Offer, Policy
from hand._progress import report_progress
from hand._tools import Effect, InvalidArguments, ToolError, ToolFunction

__all__ = [
    "Effect",
    "Hand",
    "HandRefused",
    "InvalidArguments",
    "Offer",
    "Policy",
    "ToolError",
    "ToolFunction",
    "report_progress",
]
