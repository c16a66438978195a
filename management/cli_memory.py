"""`tobe admin memory …`: what a conversation remembers, and deleting one entry."""

from __future__ import annotations

import click

from management import render
from management.cli_support import call, output_options, printer
from tobe.v1 import management_pb2 as pb


@click.group()
def memory() -> None:
    """A conversation's memory (what its model wrote with the memory tools)."""


@memory.command("list")
@click.argument("key")
@output_options
def list_(key: str) -> None:
    """List the memory of conversation KEY, sorted by key, with the texts."""
    response = call("ListConversationMemory", pb.ListConversationMemoryRequest(key=key))
    printer().memory(render.memory(key, response))


@memory.command()
@click.argument("key")
@click.argument("memory_key")
@output_options
def delete(key: str, memory_key: str) -> None:
    """Delete the entry MEMORY_KEY from conversation KEY's memory (audited; a missing entry
    succeeds)."""
    response = call(
        "DeleteConversationMemory",
        pb.DeleteConversationMemoryRequest(key=key, memory_key=memory_key),
    )
    printer().memory_deletion({"key": key, "memory_key": memory_key, "existed": response.existed})
