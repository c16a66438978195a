"""Whether a store is already at the packaged migrations' head, answered without Alembic.

The Mind upgrades its store at every start, and at every start but the first (and the first
after an update) the store is already at head: the upgrade changes nothing, yet importing
Alembic costs the process tens of MiB for its whole life. So the Mind asks this first. The
head is read from the revision files' `revision` and `down_revision` lines, the stored
revision from `alembic_version`; anything unexpected (not exactly one head, a line that does
not parse, no version table) answers False, and Alembic decides, run in a child process
(`mind.store.upgrade_child`) so that not even a first start leaves it in the Mind.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from sqlalchemy import exc, text

from mind.store.engine import create_migration_engine, is_sqlite, sync_url
from mind.store.upgrade_child import upgrade_in_child

VERSIONS = Path(__file__).with_name("migrations") / "versions"
_ASSIGNMENT = re.compile(r"^(revision|down_revision)\b[^=\n]*=\s*(.+)$", re.MULTILINE)


def packaged_head() -> str | None:
    """The one revision no other revises, or None when the files do not show exactly one."""
    revisions: set[str] = set()
    revised: set[object] = set()
    for path in VERSIONS.glob("*.py"):
        found = dict(_ASSIGNMENT.findall(path.read_text(encoding="utf-8")))
        try:
            revision = ast.literal_eval(found["revision"])
            down = ast.literal_eval(found.get("down_revision", "None"))
        except (KeyError, ValueError, SyntaxError):
            return None
        if not isinstance(revision, str):
            return None
        revisions.add(revision)
        revised.update(down if isinstance(down, tuple | list) else (down,))
    heads = revisions - revised
    return heads.pop() if len(heads) == 1 else None


def stored_revision(url: str) -> str | None:
    """The revision the store at `url` records; None when it records none (or one is absent:
    a SQLite file that does not exist yet is not created)."""
    target = sync_url(url)
    if is_sqlite(target) and not Path(target.database or "").is_file():
        return None
    engine = create_migration_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    except exc.DBAPIError:
        return None
    finally:
        engine.dispose()
    return str(rows[0][0]) if len(rows) == 1 else None


def at_head(url: str) -> bool:
    """Whether the store at `url` is known to be at the packaged head (no upgrade needed)."""
    head = packaged_head()
    return head is not None and stored_revision(url) == head


def upgrade_when_behind(url: str) -> None:
    """Migrate the store at `url` to the head when it is not there, in a child process
    (`mind.store.upgrade_child`): the caller never imports Alembic."""
    if not at_head(url):
        upgrade_in_child(url)
