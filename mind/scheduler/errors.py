"""The scheduler's own refusal; the rest it raises are plain `mind.errors` kinds.

InvalidTrigger   InvalidInput   the trigger cannot be scheduled; nothing written
"""

from __future__ import annotations

from mind.errors import InvalidInput


class InvalidTrigger(InvalidInput):
    """Caught by name where a proposed action's trigger is checked before it is scheduled."""
