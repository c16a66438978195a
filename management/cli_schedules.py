"""`tobe admin schedules …`: scheduled actions of every conversation, and pausing, resuming or
deleting one."""

from __future__ import annotations

import click

from management import render
from management.cli_support import call, output_options, printer
from tobe.v1 import common_pb2
from tobe.v1 import management_pb2 as pb

CHANGES = {
    "pause": common_pb2.SCHEDULE_CHANGE_PAUSE,
    "resume": common_pb2.SCHEDULE_CHANGE_RESUME,
    "delete": common_pb2.SCHEDULE_CHANGE_DELETE,
}


@click.group()
def schedules() -> None:
    """Scheduled actions (what the Mind does by itself at a time, on an interval or when
    something happens)."""


@schedules.command("list")
@click.option("--conversation", "conversation_key", default="", help="Only this conversation's.")
@click.option("--all", "include_ended", is_flag=True, help="Also finished and deleted ones.")
@output_options
def list_(conversation_key: str, include_ended: bool) -> None:
    """List scheduled actions, oldest first, with their next time in the owner's zone."""
    response = call(
        "ListSchedules",
        pb.ListSchedulesRequest(conversation_key=conversation_key, include_ended=include_ended),
    )
    printer().schedules([render.scheduled(action) for action in response.scheduled])


def _change(name: str, help_text: str) -> None:
    @schedules.command(name, help=help_text)
    @click.argument("schedule_id")
    @output_options
    def command(schedule_id: str) -> None:
        response = call(
            "ChangeScheduledAction",
            pb.ChangeScheduledActionRequest(id=schedule_id, change=CHANGES[name]),
        )
        printer().schedule_change(name, render.scheduled(response.scheduled))


_change("pause", "Pause scheduled action SCHEDULE_ID: it fires again only once resumed (audited).")
_change(
    "resume",
    "Resume paused action SCHEDULE_ID: it fires next at its first time from now; times it "
    "missed while paused are not fired (audited).",
)
_change("delete", "Delete scheduled action SCHEDULE_ID: it never fires again (audited).")
