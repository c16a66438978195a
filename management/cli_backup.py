"""`tobe backup` and `tobe restore`: the whole of a ToBe in one archive, and back."""

from __future__ import annotations

from pathlib import Path

import click

from management.backup import BackupError, BackupReport, take_backup
from management.restore import RestoreError, RestoreReport, restore
from tobe.config import Settings, load_settings

_DATA_DIR = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The data directory (default: TOBE_DATA_DIR or the XDG data directory).",
)


def _settings(data_dir: Path | None) -> Settings:
    return load_settings(data_dir=data_dir) if data_dir is not None else load_settings()


@click.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@_DATA_DIR
def backup(file: Path, force: bool, data_dir: Path | None) -> None:
    """Write one archive of this ToBe to FILE (a directory: a dated file in it), while it runs.

    It holds a consistent snapshot of the store (SQLite's backup API), the credentials and
    secrets key, TLS files, skills, resources, the Hand workspace of `tobe up`, Awareness's
    journal, media and adapter state, and the configuration file. Not logs, sockets or
    runtime.json. A PostgreSQL store is left to pg_dump.
    """
    try:
        report = take_backup(_settings(data_dir), file, overwrite=force)
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None
    for line in _backup_lines(report):
        click.echo(line)


def _backup_lines(report: BackupReport) -> list[str]:
    manifest = report.manifest
    schema = f"schema {manifest.schema_revision}" if manifest.schema_revision else "no schema"
    store = (
        f"store at {schema}" if manifest.database == "sqlite" else "PostgreSQL store not included"
    )
    lines = [
        f"Backed up {manifest.data_dir} ({report.files} files, {_size(report.size)}; {store}) "
        f"to {report.archive}",
        "It holds secrets (credentials, the secrets key, the configuration): it was created "
        "owner-only (0600); keep it that way.",
    ]
    if report.pg_dump is not None:
        lines.append(f"The store is PostgreSQL; back it up with: {report.pg_dump}")
    lines += [f"Not included (outside the data directory): {path}" for path in report.outside]
    return lines


@click.command("restore")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--force",
    is_flag=True,
    help="Restore into a data directory that is not empty: its entries are moved aside.",
)
@click.option(
    "--config",
    "restore_config",
    is_flag=True,
    help="Also write the archive's configuration file where this ToBe reads it "
    "(TOBE_CONFIG or ~/.config/tobe/config.toml), keeping the one there beside it.",
)
@_DATA_DIR
def restore_command(file: Path, force: bool, restore_config: bool, data_dir: Path | None) -> None:
    """Restore a `tobe backup` archive into the data directory, then migrate its store.

    Refused while ToBe runs on the data directory, and for an archive from a newer ToBe.
    """
    try:
        report = restore(_settings(data_dir), file, force=force, restore_config=restore_config)
    except RestoreError as exc:
        raise click.ClickException(str(exc)) from None
    for line in _restore_lines(report):
        click.echo(line)


def _restore_lines(report: RestoreReport) -> list[str]:
    manifest = report.manifest
    lines = [f"Restored the backup of {manifest.created_at} into {report.data_dir}"]
    if report.revision is not None:
        before = manifest.schema_revision or "an empty schema"
        moved = "" if before == report.revision else f" (migrated from {before})"
        lines.append(f"The store is at schema {report.revision}{moved}")
    if report.replaced is not None:
        lines.append(f"What the data directory held before is in {report.replaced}")
    if report.config is not None:
        lines.append(f"Restored the configuration file to {report.config}")
        if report.config_replaced is not None:
            lines.append(f"The one it replaced is {report.config_replaced}")
    elif manifest.config_file is not None:
        lines.append(
            f"The archive holds the configuration file (from {manifest.config_file}); "
            "not restored: pass --config to write it too"
        )
    return [*lines, *report.notes]


def _size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB"):
        if value < 1024:
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
