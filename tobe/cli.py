"""The `tobe` command. Each package contributes its own command group; this file only wires.

Subcommands are imported on first use: every service is started as `tobe … serve`, and
importing all of them for each start would cost seconds per process.
"""

from __future__ import annotations

import importlib

import click

from tobe import __version__

# name -> "module:attribute" of the click command.
COMMANDS = {
    "admin": "management.cli:admin",
    "awareness": "awareness.cli:awareness",
    "chat": "face.cli:chat",
    "db": "mind.store.cli:db",
    "face": "face.cli:face",
    "hand": "hand.cli:hand_group",
    "health": "tobe.health_cli:health",
    "mind": "mind.cli:mind",
    "models": "management.cli_models:models",
    "setup": "management.cli_setup:setup",
    "up": "management.up:up",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when they are looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, attribute = target.split(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tobe")
def main() -> None:
    """ToBe: a self-hosted personal AI agent platform."""
