"""The Reviewer's view of the arguments: values shown, sensitive ones masked.

Approval requests and audit rows use the tool runtime's secret-free shape summary
(`mind.tools.summary`). The Reviewer needs to see what a call does, so it gets the values —
except sensitive ones (`mind.tools.masking`), which are `[REDACTED]`. Long values are cut, and
the text also passes through the credential redaction of the logs.
"""

from __future__ import annotations

import json
from typing import Any

from mind.tools.masking import cut, masked_arguments
from tobe.runtime.redact import redact

VALUE_LIMIT = 200
SUMMARY_LIMIT = 2000


def reviewer_summary(arguments: dict[str, Any], schema: dict[str, Any] | None) -> str:
    """JSON of the masked arguments, cut to a bounded length."""
    masked = masked_arguments(arguments, schema, VALUE_LIMIT)
    text = json.dumps(masked, ensure_ascii=False, sort_keys=True)
    return cut(redact(text), SUMMARY_LIMIT)
