"""Who a call comes from, once its credential authenticated."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Identity:
    credential_id: str
    kind: str
    principal: str
    scopes: tuple[str, ...] = ()
    # When the credential stops being valid (None: never); lets a cached answer end on time.
    expires_at: datetime | None = field(default=None, compare=False)

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes
