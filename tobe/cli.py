"""The `tobe` command. Each package contributes its own command group; this file only wires."""

from __future__ import annotations

import click

from tobe import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tobe")
def main() -> None:
    """ToBe: a self-hosted personal AI agent platform."""
