"""Process logging setup: one format, credential values always redacted."""

from __future__ import annotations

import logging
import sys
from typing import Literal

from tobe.runtime.json_logs import JsonFormatter
from tobe.runtime.redact import RedactingFilter


def configure_logging(
    level: str = "INFO", *, process: str = "tobe", format: Literal["text", "json"] = "text"
) -> None:
    """Log to stderr with the process name, as text or JSON lines (`tobe.runtime.json_logs`);
    every handler redacts credentials."""
    handler = logging.StreamHandler(sys.stderr)
    if format == "json":
        handler.setFormatter(JsonFormatter(process))
    else:
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
