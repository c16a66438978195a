"""Removal of credential values from text that may reach a log line or an audit row."""

from __future__ import annotations

import logging
import re

# Credential tokens look like `tobe_<prefix>_<secret>`; bearer headers may carry any token.
_TOKEN = re.compile(r"tobe_[A-Za-z0-9]{6,}_[A-Za-z0-9_\-]{8,}")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\",]+")
_KEYLIKE = re.compile(
    r"(?i)((?:api[_-]?key|x-api-key|x-goog-api-key|secret|password|token)[\"']?\s*[:=]\s*[\"']?)"
    r"[^\s'\",&]+"
)
MASK = "[REDACTED]"


def redact(text: str) -> str:
    """Replace anything that looks like a credential or API key with a mask."""
    text = _TOKEN.sub(MASK, text)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    return _KEYLIKE.sub(lambda m: m.group(1) + MASK, text)


class RedactingFilter(logging.Filter):
    """Logging filter that redacts the fully formatted message of every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
