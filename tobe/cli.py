"""The `tobe` command. Each package contributes its own command group; this file only wires.

Subcommands are imported on first use: every service is started as `tobe … serve`, and
importing all of them for each start would cost seconds per process. Errors that escape a
command end it as `tobe.cli_errors` says: one line, no traceback.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from tobe import __version__
from tobe.runtime.import_pause import collector_paused

# name -> "module:attribute" of the click command.
COMMANDS = {
    "admin": "management.cli:admin",
    "awareness": "awareness.cli:awareness",
    "backup": "management.cli_backup:backup",
    "channels": "face.channels.cli:channels",
    "chat": "face.cli:chat",
    "db": "mind.store.cli:db",
    "doctor": "management.doctor.cli:doctor",
    "face": "face.cli:face",
    "hand": "hand.cli:hand_group",
    "health": "tobe.health_cli:health",
    "mind": "mind.cli:mind",
    "models": "management.cli_models:models",
    "restore": "management.cli_backup:restore_command",
    "search": "face.cli:search",
    "setup": "management.cli_setup:setup",
    "up": "management.up:up",
    "usage": "management.cli_usage:usage",
}
_ARGS = "tobe.args"
# name -> "module:function" given the command's arguments, called before its module is imported:
# `tobe up` starts the process that preloads the services' code while it loads its own.
EARLY = {"up": "management.up_starter:start_early"}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when they are looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, attribute = target.split(":")
        with collector_paused():
            command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        early = EARLY.get(args[0]) if args else None
        if early is not None:
            module, function = early.split(":")
            getattr(importlib.import_module(module), function)(args[1:])
        return super().resolve_command(ctx, args)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGS] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as error:
            from tobe.cli_errors import translate

            verbose = bool(ctx.params.get("verbose"))
            raise translate(error, _command(ctx), verbose=verbose) from None


def _command(ctx: click.Context) -> str:
    """`tobe` and the subcommand words it was given (`tobe mind serve`), for messages."""
    words = ["tobe"]
    for arg in ctx.meta.get(_ARGS, []):
        if arg.startswith("-"):
            if len(words) > 1:
                break
            continue
        words.append(arg)
    return " ".join(words)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tobe")
@click.option(
    "--verbose",
    is_flag=True,
    envvar="TOBE_VERBOSE",
    help="On an unexpected error, print its traceback (also TOBE_VERBOSE=1).",
)
def main(verbose: bool) -> None:
    """ToBe: a self-hosted personal AI agent platform."""
