"""`tobe admin`: operator commands, answered by the running Mind or offline under the lock."""

from __future__ import annotations

from pathlib import Path

import click

from management import render
from management.cli_approvals import approvals
from management.cli_channels import channels
from management.cli_conversations import conversations
from management.cli_credentials import credentials
from management.cli_memory import memory
from management.cli_pair import pair
from management.cli_schedules import schedules
from management.cli_support import (
    AdminOptions,
    call,
    face_health,
    output_options,
    parse_when,
    printer,
    web_health,
)
from management.cli_tls import tls
from management.cli_whoami import whoami
from management.cli_widget_types import widget_types
from tobe.runtime.timestamps import to_timestamp
from tobe.v1 import management_pb2 as pb


@click.group()
@output_options
@click.option(
    "--wait",
    type=click.FloatRange(0),
    default=5.0,
    show_default=True,
    help="Seconds to wait for a Mind that is starting before giving up.",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The data directory (default: TOBE_DATA_DIR or the XDG data directory).",
)
@click.pass_context
def admin(ctx: click.Context, wait: float, data_dir: Path | None) -> None:
    """Manage credentials, conversations, approvals and the audit trail.

    Talks to the running Mind over its owner-only socket; when no Mind is running, takes the
    data directory's state lock and runs the same service in-process.
    """
    options = ctx.ensure_object(AdminOptions)
    options.wait = wait
    options.data_dir = data_dir


@admin.command()
@output_options
def status() -> None:
    """Services (Face and its web client too), versions, connected Hands and clients,
    database and schema."""
    item = render.status(call("GetStatus", pb.GetStatusRequest()))
    item["face"] = face_health()
    web = web_health()
    if web is not None:
        item["web"] = web
    printer().status(item)


@admin.command()
@click.option("--action", default="", help='An action, or a prefix ending in "." (credential.).')
@click.option("--target", default="", help="A credential id or conversation key.")
@click.option("--actor", default="", help="Who did it.")
@click.option("--since", help="From this time (2026-12-01T09:00Z) or this long ago (2h, 7d).")
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@output_options
def audit(action: str, target: str, actor: str, since: str | None, limit: int) -> None:
    """The management audit trail, newest first (never contains a secret)."""
    request = pb.ListAuditRequest(
        action=action,
        target=target,
        actor=actor,
        since=to_timestamp(parse_when(since, ago=True)) if since else None,
        limit=limit,
    )
    printer().audit([render.audit_entry(e) for e in call("ListAudit", request).entries])


admin.add_command(credentials)
admin.add_command(conversations)
admin.add_command(memory)
admin.add_command(schedules)
admin.add_command(approvals)
admin.add_command(channels)
admin.add_command(tls)
admin.add_command(whoami)
admin.add_command(pair)
admin.add_command(widget_types)
