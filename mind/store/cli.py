"""`tobe db`: apply, inspect and roll back the store's schema migrations.

Alembic and SQLAlchemy are imported when a `db` command runs, so other `tobe` commands start
without paying for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

T = TypeVar("T")

url_option = click.option(
    "--url",
    default=None,
    metavar="URL",
    help="Database URL (default: the configured store, the SQLite file in the data directory).",
)


def _resolve(url: str | None) -> str:
    if url:
        return url
    from tobe.config import load_settings

    return load_settings().store_url


def _revision(url: str) -> str | None:
    from mind.store import migrate

    return _guarded("reading the revision", url, migrate.current)


def _guarded(action: str, url: str, step: Callable[..., T], *args: str) -> T:
    """Run a migration step; database and Alembic failures become clean CLI errors."""
    from alembic.util import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    from mind.store.engine import redacted_url

    try:
        return step(url, *args)
    except (SQLAlchemyError, CommandError, ValueError) as exc:
        raise click.ClickException(f"{action} failed on {redacted_url(url)}: {exc}") from exc


@click.group("db")
def db() -> None:
    """Manage the store's schema (SQLite by default, PostgreSQL by URL)."""


@db.command()
@url_option
@click.option("--revision", default="head", show_default=True, help="Target revision.")
def upgrade(url: str | None, revision: str) -> None:
    """Apply migrations up to REVISION; creates the database if needed (idempotent)."""
    from mind.store import migrate

    target = _resolve(url)
    before = _revision(target)
    _guarded("upgrade", target, migrate.upgrade, revision)
    after = _revision(target)
    if before == after:
        click.echo(f"already at {after or 'base'}; nothing to do")
    else:
        click.echo(f"upgraded {before or 'base'} -> {after}")


@db.command()
@url_option
@click.argument("revision")
def downgrade(url: str | None, revision: str) -> None:
    """Roll migrations back to REVISION (`base` removes every table)."""
    from mind.store import migrate

    target = _resolve(url)
    before = _revision(target)
    _guarded("downgrade", target, migrate.downgrade, revision)
    click.echo(f"downgraded {before or 'base'} -> {_revision(target) or 'base'}")


@db.command()
@url_option
def current(url: str | None) -> None:
    """Print the database's revision (`base` when empty) and whether it is at head."""
    from mind.store import migrate

    target = _resolve(url)
    revision = _revision(target)
    state = "head" if revision == migrate.head_revision() else "behind head"
    click.echo(f"{revision or 'base'} ({state})")
