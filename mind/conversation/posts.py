"""Messages written by code, not by the model: posts, the welcome and the error reply.

Each is an assistant message with no run whose payload names who posted it (`posted_by`): a
principal (Mind.PostMessage), or `welcome` / `error_reply` for the fixed texts
(`mind.conversation.replies`). A post that has to wait for the active run is an input of the
conversation's queue whose source is a `sources.PostSource`; it is delivered
as such a message and starts no run.
"""

from __future__ import annotations

from typing import Any

from mind.conversation.messages import append_message
from mind.store import models
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode

WELCOME = "welcome"
ERROR_REPLY = "error_reply"


def append(
    tx: WriteTx,
    audience: list[str],
    *,
    key: str,
    text: str,
    posted_by: str,
    extra: dict[str, Any] | None = None,
) -> models.Message:
    """Append a posted message and its `message_appended` event (shown in every mode)."""
    return append_message(
        tx,
        audience,
        key=key,
        run_id=None,
        role="assistant",
        text=text,
        payload={"posted_by": posted_by, **(extra or {})},
        mode=DetailMode.TRANSPARENT,
    )
