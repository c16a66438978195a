"""Log records as JSON lines (`log.format = "json"`), with the current trace and span ids.

One object a line: `time` (RFC 3339, UTC), `level`, `process`, `logger`, `message`, `exception`
when there is one, and `trace_id`/`span_id` (lower-case hex, as in `traceparent`) while a span
is current, so a log line can be joined to its trace. The redacting filter runs first, as for
the text format.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from tobe import telemetry


def _ids() -> dict[str, str]:
    if not telemetry.tracing():
        return {}
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}


class JsonFormatter(logging.Formatter):
    def __init__(self, process: str) -> None:
        super().__init__()
        self.process = process

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "process": self.process,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        line.update(_ids())
        return json.dumps(line, ensure_ascii=False)
