"""`tobe admin conversations …`: list, show, compact, set-profile, delete."""

from __future__ import annotations

import sys

import click

from management import render
from management.cli_support import call, output_options, printer
from tobe.v1 import management_pb2 as pb

# A compaction waits for the conversation's active run to end, then for the model's summary.
COMPACT_TIMEOUT = 600.0


@click.group()
def conversations() -> None:
    """Every principal's conversations."""


@conversations.command("list")
@click.option("--owner", default="", help="Only this principal's conversations.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@output_options
def list_(owner: str, limit: int) -> None:
    """List conversations, newest first."""
    response = call(
        "ListAllConversations", pb.ListAllConversationsRequest(owner=owner, limit=limit)
    )
    printer().conversations([render.conversation(c) for c in response.conversations])


@conversations.command()
@click.argument("key")
@output_options
def show(key: str) -> None:
    """Show a conversation and how much it holds."""
    response = call("InspectConversation", pb.InspectConversationRequest(key=key))
    printer().inspection(render.inspection(response))


@conversations.command()
@click.argument("key")
@output_options
def compact(key: str) -> None:
    """Summarise a conversation's older messages now, to free its context (needs the Mind)."""
    response = call("CompactContext", pb.CompactContextRequest(key=key), timeout=COMPACT_TIMEOUT)
    printer().compaction(key, render.compaction(response.compaction))


@conversations.command("set-profile")
@click.argument("key")
@click.argument("profile")
@output_options
def set_profile(key: str, profile: str) -> None:
    """Set the profile a conversation runs with (from its next run)."""
    response = call(
        "ChangeConversationProfile",
        pb.ChangeConversationProfileRequest(key=key, profile=profile),
    )
    printer().profile_change(render.conversation(response.conversation))


@conversations.command()
@click.argument("key")
@click.option("--yes", "-y", is_flag=True, help="Delete without asking.")
@output_options
def delete(key: str, yes: bool) -> None:
    """Delete a conversation and everything it holds; says what was removed."""
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError("refusing to delete without confirmation: pass --yes")
        click.confirm(
            f"Delete conversation {key} with all its messages, runs and approvals?", abort=True
        )
    response = call("DeleteConversation", pb.DeleteConversationRequest(key=key))
    printer().deletion(render.deletion(response))
