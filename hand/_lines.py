"""What a person running a Hand sees: its lifecycle lines on the `hand` logger.

Libraries normally leave handlers to the application (the logging HOWTO), and Python's
last-resort handler shows only warnings, so a script that configured no logging saw nothing
when its Hand connected. `Hand.serve` is that script's main loop, though, so, like discord.py's
`Client.run`, it adds one stderr handler to the `hand` logger at INFO when no handler would
receive the Hand's records. An application that configured logging (a handler on `hand` or on
the root, e.g. `logging.basicConfig`) keeps full control and gets no second copy.
"""

from __future__ import annotations

import logging

from tobe.runtime.redact import RedactingFilter
from tobe.v1 import hand_pb2

log = logging.getLogger("hand")


def show_by_default() -> None:
    """Send the Hand's INFO lines to stderr unless the application set up logging."""
    if log.hasHandlers():
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s hand %(levelname)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    log.addHandler(handler)
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)


def attached_line(target: str, welcome: hand_pb2.HandWelcome, tools: int) -> str:
    """`connected to <mind>, attached as <name> (<id>), serving <principals>, N tools`."""
    serving = "everyone" if welcome.serves_all else ", ".join(welcome.serves) or "no one"
    noun = "tool" if tools == 1 else "tools"
    return (
        f"connected to {target}, attached as {welcome.hand_name} ({welcome.hand_id}), "
        f"serving {serving}, {tools} {noun}"
    )


def token_problem(token: str) -> str | None:
    """Why `token` cannot be a credential at all (None when it may be one).

    Caught before dialing: gRPC refuses such metadata locally with INTERNAL, which would
    otherwise be retried forever, and a space makes the Mind read no bearer token at all.
    """
    if not token.strip():
        return "the Hand credential is empty"
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        return (
            "the Hand credential has spaces or non-ASCII characters, so it is no credential "
            "(still a placeholder like '<hand credential>'?)"
        )
    return None
