"""Whether the local Hand's commands can run in the bubblewrap sandbox here: the line
`tobe up`'s banner prints (`management.up_commands`), with its ways out as the fix."""

from __future__ import annotations

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from management.up_commands import Commands, commands_note

CHECK = "sandbox"
_STATUS = {
    Commands.SANDBOXED: Status.OK,
    Commands.WITHHELD: Status.WARN,
    Commands.UNCONFINED: Status.WARN,
    Commands.NONE: Status.SKIP,
}


def check_sandbox(doctor: Doctor) -> list[Finding]:
    if doctor.settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    note = commands_note(doctor.settings.hand)
    return [Finding(_STATUS[note.state], CHECK, note.text, note.fix)]
