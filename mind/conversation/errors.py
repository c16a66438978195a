"""The conversation layer's own refusals; every other one it raises is a plain `mind.errors` kind.

    CompactionFailed   Unavailable   the summarising provider call failed; nothing changed
    ShuttingDown       Unavailable   the Mind is stopping; retry elsewhere/later

Both are caught by name (a compaction's caller, the manager's shutdown), so each keeps a class.
"""

from __future__ import annotations

from mind.errors import Unavailable


class ShuttingDown(Unavailable):
    pass


class CompactionFailed(Unavailable):
    pass
