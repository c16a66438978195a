"""`tobe admin approvals …`: list and show approval requests with what each asks a person."""

from __future__ import annotations

import click

from management import render
from management.cli_support import call, output_options, printer
from tobe.v1 import management_pb2 as pb


@click.group()
def approvals() -> None:
    """Approval requests of every conversation."""


@approvals.command("list")
@click.option("--pending", is_flag=True, help="Only requests still waiting for a decision.")
@click.option("--conversation", default="", help="Only this conversation's requests.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@output_options
def list_(pending: bool, conversation: str, limit: int) -> None:
    """List approval requests, newest first, with their decision text."""
    response = call(
        "ListApprovals",
        pb.ListApprovalsRequest(pending_only=pending, conversation_key=conversation, limit=limit),
    )
    printer().approvals([render.approval(a) for a in response.approvals])


@approvals.command()
@click.argument("approval_id")
@output_options
def show(approval_id: str) -> None:
    """Show one approval request in full, its decision text included."""
    response = call("GetApproval", pb.GetApprovalRequest(id=approval_id))
    printer().approval(render.approval(response.approval))
