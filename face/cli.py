"""`tobe face serve` and `tobe chat`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from face.face_address import face_endpoint
from tobe.config import Settings, load_settings
from tobe.runtime.import_pause import collector_paused
from tobe.runtime.logs import configure_logging
from tobe.runtime.ports import accepts_connections
from tobe.runtime.private_files import private_umask
from tobe.runtime.tokens import token_file
from tobe.telemetry import setup as telemetry_setup
from tobe.tls_options import TlsOptions, tls_client_options

if TYPE_CHECKING:
    from tobe.runtime.tls import ClientTls

CHAT_HELP = """Chat with ToBe in the terminal, through the Face gateway.

The reply streams as it is generated; tool calls show their arguments, progress and results.
Commands: /new [title], /list, /switch N|KEY, /help, /cancel, /quit. End a line with \\ to continue
it, or wrap a block in \"\"\" lines. Ctrl-C cancels the running reply, Ctrl-D leaves.

The console is transparent by default (--summary to hide raw tool arguments and results):
it shows raw tool arguments and results, so it may show secrets you typed yourself, and so
may a log or a recording of this terminal.

The credential is --token, else TOBE_CHAT_TOKEN, else the local client credential that
`tobe up` writes to <data dir>/credentials/client.token.

The Face is the one `tobe up` started on the data directory (TOBE_DATA_DIR): chat dials the
address it published in <data dir>/runtime.json, else face.listen; --address overrides both.

A Face serving TLS is reached with --ca (its CA; a Face that published its CA needs none), or
an address tls://host:port that the system's roots vouch for; --cert and --key present a
client certificate (mTLS).
"""


@click.group("face")
def face() -> None:
    """The client gateway (FaceGateway)."""


@face.command("serve")
@click.option("--listen", help="Address to serve on (default: face.listen).")
@click.option(
    "--mind",
    "minds",
    multiple=True,
    help="Address of a Mind; repeat for Minds sharing one database, tried in order "
    "(default: face.mind_addresses, else face.mind_address).",
)
@click.option("--web-listen", help="Address to serve the web client on (default: face.web.listen).")
@click.option("--no-web", is_flag=True, help="Do not serve the web client (face.web.enabled).")
def serve(listen: str | None, minds: tuple[str, ...], web_listen: str | None, no_web: bool) -> None:
    """Serve FaceGateway to clients, and the web client, until SIGTERM or Ctrl-C."""
    with collector_paused():
        from face.server import FaceConfigError, build
        from face.server import serve as run_server
        from face.web.listener import WebBindError
        from tobe.runtime.publishing import bind_failure
        from tobe.runtime.server import BindError

    settings = load_settings()
    if listen:
        settings.face.listen = listen
    if minds:
        settings.face.mind_addresses = list(minds)
    if web_listen:
        settings.face.web.listen = web_listen
    if no_web:
        settings.face.web.enabled = False
    configure_logging(settings.log_level, process="face", format=settings.log.format)
    telemetry_setup.configure(settings.telemetry, "face")
    private_umask()
    try:
        asyncio.run(run_server(build(settings)))
    except FaceConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    except WebBindError as exc:
        message = bind_failure(settings.data_dir, "face web", exc, section="face.web")
        raise click.ClickException(message) from None
    except BindError as exc:
        raise click.ClickException(bind_failure(settings.data_dir, "face", exc)) from None


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


def _dial(
    settings: Settings, token: str | None, address: str | None, tls: TlsOptions, command: str
) -> tuple[str, str, ClientTls | None]:
    """The Face's address, the client secret and the channel's TLS; ClickException when no
    Face answers there (said once, at the start; a Face that goes away later is redialled)."""
    secret = _client_token(token, settings.credentials_dir)
    face = face_endpoint(settings, address, tls)
    if not accepts_connections(face.address):
        raise click.ClickException(
            f"no Face answers at {face.address} ({face.source}); start ToBe with `tobe up`, "
            f"or point {command} at it with --address HOST:PORT or TOBE_DATA_DIR=<the data "
            "directory `tobe up` printed>"
        )
    return face.address, secret, face.tls


@click.command("chat", help=CHAT_HELP)
@click.option("--token", envvar="TOBE_CHAT_TOKEN", help="Client credential secret.")
@click.option(
    "--address", help="Face address (default: where `tobe up` published it, else face.listen)."
)
@click.option("--conversation", "-c", help="Conversation key to open (default: your newest chat).")
@click.option("--summary", is_flag=True, help="Summary detail mode instead of transparent.")
@tls_client_options
def chat(
    token: str | None,
    address: str | None,
    conversation: str | None,
    summary: bool,
    tls: TlsOptions,
) -> None:
    # Imported here so that `tobe face serve` starts without the terminal stack.
    from rich.console import Console

    from face.chat.repl import ChatRepl
    from face.chat.session import ChatSession, CommandFailed, FatalSessionError
    from tobe.v1 import common_pb2, events_pb2

    settings = load_settings()
    target, secret, channel_tls = _dial(settings, token, address, tls, "chat")
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


@click.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option("--token", envvar="TOBE_CHAT_TOKEN", help="Client credential secret.")
@click.option(
    "--address", help="Face address (default: where `tobe up` published it, else face.listen)."
)
@click.option("--limit", default=20, show_default=True, help="At most this many conversations.")
@tls_client_options
def search(
    query: tuple[str, ...], token: str | None, address: str | None, limit: int, tls: TlsOptions
) -> None:
    """Search your conversations: what was said, tool results, summaries and memory.

    Words are ANDed; "quoted phrases", prefix* and OR are understood. Prints each matching
    conversation (newest first) with its key, date and a snippet of its best match; open one
    with `tobe chat -c KEY`.
    """
    from face.chat.session import ChatSession, CommandFailed, FatalSessionError
    from tobe.v1 import face_pb2, mind_pb2

    settings = load_settings()
    target, secret, channel_tls = _dial(settings, token, address, tls, "search")
    request = mind_pb2.SearchConversationsRequest(query=" ".join(query), limit=limit)

    async def ask() -> list[mind_pb2.ConversationMatch]:
        session = ChatSession(
            target,
            secret,
            on_event=lambda event: None,
            on_status=lambda status: None,
            client_name="tobe-search",
            tls=channel_tls,
        )
        await session.start()
        try:
            reply = await session.call(face_pb2.MindCall(search_conversations=request))
        finally:
            await session.close()
        return list(reply.search_conversations.matches)

    try:
        matches = asyncio.run(ask())
    except (FatalSessionError, CommandFailed) as exc:
        raise click.ClickException(str(exc)) from exc
    if not matches:
        click.echo("nothing found")
    for match in matches:
        conversation = match.conversation
        day = conversation.created_at.ToDatetime().date().isoformat()
        click.echo(f"{conversation.key}  {day}  {conversation.title or 'Untitled conversation'}")
        if match.snippet:
            click.echo(
                f"    {match.snippet}"
                + (f"  (message {match.message_id})" if match.message_id else "")
            )
