"""Whether the local Hand's `run_command` runs sandboxed, is withheld or runs unconfined, said
in one line by `tobe up`'s banner and by `tobe doctor`.

`tobe up` starts its Hand with `hand.withhold_commands_without_sandbox`: where bubblewrap cannot
run (not installed, no user namespaces, a container), the Hand starts without `run_command`
instead of refusing to start, unless unconfined commands are allowed
(`tobe up --allow-unconfined-commands`, `hand.allow_unconfined_commands`). Both look at the
sandbox with the Hand's own probe (`hand.sandbox.sandbox_problem`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tobe.config import HandSettings

WAYS_OUT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) with user namespaces "
    "enabled, or run `tobe up --allow-unconfined-commands`"
)


class Commands(Enum):
    SANDBOXED = "sandboxed"
    # No sandbox runs here: the Hand offers no `run_command`.
    WITHHELD = "withheld"
    # No sandbox runs here and the operator allowed commands without one.
    UNCONFINED = "unconfined"
    # No command may run anyway (none allowed, or a read-only Hand).
    NONE = "none"


@dataclass(frozen=True)
class CommandsNote:
    state: Commands
    text: str
    # What a person can do about it ("" when nothing is to be done).
    fix: str = ""


def commands_note(hand: HandSettings) -> CommandsNote:
    """What becomes of the local Hand's commands on this machine with these settings."""
    if not hand.allowed_commands or hand.read_only:
        why = "it is read-only" if hand.read_only else "hand.allowed_commands is empty"
        return CommandsNote(Commands.NONE, f"the local Hand runs no commands ({why})")
    try:
        from hand.sandbox import sandbox_problem
    except ImportError:
        return CommandsNote(Commands.NONE, "this installation has no Hand")
    problem = sandbox_problem(hand.bwrap, hand.allow_command_network)
    if problem is None:
        return CommandsNote(
            Commands.SANDBOXED,
            "run_command runs in a bubblewrap sandbox that sees only the Hand's workspace",
        )
    if hand.allow_unconfined_commands:
        return CommandsNote(
            Commands.UNCONFINED,
            "the local Hand's commands run UNCONFINED (--allow-unconfined-commands): they can "
            f"read and change anything this user can (no sandbox: {problem})",
            "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) with user "
            "namespaces enabled to sandbox them",
        )
    return CommandsNote(
        Commands.WITHHELD,
        f"run_command is withheld from the model: bubblewrap cannot run here ({problem})",
        WAYS_OUT,
    )
