"""Client credentials that could chat before scopes were checked keep chatting.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06

Until this revision the Mind never checked scope `chat`: every client credential could chat.
Now each call needs its scope (`tobe.scopes`). A client credential holding none of `chat`,
`approve` and `post` (no scopes, only `admin`, or only names nobody checks) was made before
scopes meant anything, so it gets `chat` and keeps working. One that names `approve` or `post`
was given a narrower set on purpose and is held to it.

Downgrading keeps the added `chat`: it grants nothing the older code did not.
This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_credentials = sa.table(
    "credentials",
    sa.column("id", sa.String(40)),
    sa.column("kind", sa.String(16)),
    sa.column("scopes", sa.JSON()),
)
_NARROWED = {"chat", "approve", "post"}


def upgrade() -> None:
    connection = op.get_bind()
    rows = connection.execute(
        sa.select(_credentials.c.id, _credentials.c.scopes).where(_credentials.c.kind == "client")
    ).all()
    for row in rows:
        scopes = list(row.scopes or [])
        if _NARROWED.isdisjoint(scopes):
            connection.execute(
                sa.update(_credentials)
                .where(_credentials.c.id == row.id)
                .values(scopes=[*scopes, "chat"])
            )


def downgrade() -> None:
    pass
