"""Process logging setup: one format, credential values always redacted."""

from __future__ import annotations

import logging
import sys

from tobe.runtime.redact import RedactingFilter


def configure_logging(level: str = "INFO", *, process: str = "tobe") -> None:
    """Log to stderr with the process name; every handler redacts credentials."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter(f"%(asctime)s {process} %(levelname)s %(name)s: %(message)s")
    )
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # grpc and httpx log request lines that may include headers at DEBUG; keep them quiet.
    for noisy in ("grpc", "httpx", "httpcore", "asyncio"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    # Alembic names each of its plugins at every start; the migrations it runs stay logged.
    logging.getLogger("alembic.runtime.plugins").setLevel(max(logging.WARNING, root.level))
