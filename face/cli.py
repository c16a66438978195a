"""`tobe face serve` and `tobe chat`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import click
from rich.console import Console

from tobe.config import ClientTlsSettings, load_settings
from tobe.runtime.logs import configure_logging
from tobe.runtime.private_files import private_umask
from tobe.runtime.tokens import token_file
from tobe.tls_options import TlsOptions, tls_client_options

CHAT_HELP = """Chat with ToBe in the terminal, through the Face gateway.

The reply streams as it is generated; tool calls show their arguments, progress and results.
Commands: /new [title], /list, /switch <key>, /cancel, /quit. End a line with \\ to continue
it, or wrap a block in \"\"\" lines. Ctrl-C cancels the running reply, Ctrl-D leaves.

The console is transparent by default (--summary to hide raw tool arguments and results):
it shows raw tool arguments and results, so it may show secrets you typed yourself, and so
may a log or a recording of this terminal.

The credential is --token, else TOBE_CHAT_TOKEN, else the local client credential that
`tobe up` writes to <data dir>/credentials/client.token.

A Face serving TLS is reached with --ca (its CA), or an address tls://host:port that the
system's roots vouch for; --cert and --key present a client certificate (mTLS).
"""


@click.group("face")
def face() -> None:
    """The client gateway (FaceGateway)."""


@face.command("serve")
@click.option("--listen", help="Address to serve on (default: face.listen).")
@click.option("--mind", "mind_address", help="Address of the Mind (default: face.mind_address).")
def serve(listen: str | None, mind_address: str | None) -> None:
    """Serve FaceGateway to clients until SIGTERM or Ctrl-C."""
    from face.server import FaceConfigError, build
    from face.server import serve as run_server

    settings = load_settings()
    if listen:
        settings.face.listen = listen
    if mind_address:
        settings.face.mind_address = mind_address
    configure_logging(settings.log_level, process="face")
    private_umask()
    try:
        asyncio.run(run_server(build(settings)))
    except FaceConfigError as exc:
        raise click.ClickException(str(exc)) from exc


def _client_token(explicit: str | None, credentials_dir: Path) -> str:
    if explicit:
        return explicit
    path = token_file(credentials_dir, "client")
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        raise click.ClickException(
            f"no client credential: pass --token, set TOBE_CHAT_TOKEN, or run `tobe up` once "
            f"(it writes {path})"
        ) from None


@click.command("chat", help=CHAT_HELP)
@click.option("--token", envvar="TOBE_CHAT_TOKEN", help="Client credential secret.")
@click.option("--address", help="Face address (default: face.listen).")
@click.option("--conversation", "-c", help="Conversation key to open (default: the latest).")
@click.option("--summary", is_flag=True, help="Summary detail mode instead of transparent.")
@tls_client_options
def chat(
    token: str | None,
    address: str | None,
    conversation: str | None,
    summary: bool,
    tls: TlsOptions,
) -> None:
    from face.chat.repl import ChatRepl
    from face.chat.session import ChatSession, CommandFailed, FatalSessionError
    from tobe.v1 import common_pb2, events_pb2

    settings = load_settings()
    secret = _client_token(token, settings.credentials_dir)
    target, channel_tls = tls.resolve(ClientTlsSettings(), address or settings.face.listen)
    mode = common_pb2.DETAIL_MODE_SUMMARY if summary else common_pb2.DETAIL_MODE_TRANSPARENT
    console = Console()

    def session(
        on_event: Callable[[events_pb2.Event], None], on_status: Callable[[str], None]
    ) -> ChatSession:
        return ChatSession(
            target,
            secret,
            on_event=on_event,
            on_status=on_status,
            detail_mode=mode,
            tls=channel_tls,
            max_send_bytes=settings.face.max_frame_bytes,
        )

    repl = ChatRepl(console, session, max_image_bytes=settings.mind.max_image_bytes)
    try:
        asyncio.run(repl.run(conversation))
    except (FatalSessionError, CommandFailed) as exc:
        raise click.ClickException(str(exc)) from exc
    except KeyboardInterrupt:
        pass
