"""`tobe admin channels …`: the people paired on Matrix and email, and the codes they wait with.

A person who writes to the agent on a channel before being paired is given a one-time code
(`face.channels.state`). `approve CODE` makes them a client credential (scopes chat and
approve) through the Management service, like every credential, then pairs their address with
it in the channels' state file, which the running channels process reads; `forget` revokes
that credential and unpairs them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from management.cli_pair import expires_in
from management.cli_support import AdminOptions, call, output_options, printer
from management.render import Printer, human_time
from tobe.scopes import APPROVE, CHAT
from tobe.v1 import management_pb2 as pb

if TYPE_CHECKING:
    from face.channels.state import ChannelState

NOT_USED_YET = "no channel has been used yet"


def _data_dir() -> Path:
    return click.get_current_context().ensure_object(AdminOptions).settings().data_dir


def _open_state() -> ChannelState | None:
    """The channels' state file of this data directory; None when none was made yet."""
    from face.channels.state import ChannelState, state_file

    data_dir = _data_dir()
    return ChannelState.at(data_dir) if state_file(data_dir).exists() else None


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


@click.group()
def channels() -> None:
    """People paired on Matrix and email, and the pairing codes they wait with."""


@channels.command("list")
@output_options
def list_() -> None:
    """Paired people and the pairing codes waiting for your approval."""
    state = _open_state()
    out = printer()
    if state is None:
        if out.as_json:
            out.json({"paired": [], "waiting": []})
        else:
            out.note(f"Nobody is paired and no code is waiting: {NOT_USED_YET}.")
        return
    now = datetime.now(UTC)
    try:
        paired = [
            {
                "channel": sender.channel,
                "address": sender.address,
                "principal": sender.principal,
                "credential_id": sender.credential_id,
                "paired_at": _iso(state.paired_at(sender.channel, sender.address)),
            }
            for sender in state.senders()
        ]
        waiting = [
            {
                "code": pairing.code,
                "channel": pairing.channel,
                "address": pairing.address,
                "name": pairing.display_name,
                "expires_at": _iso(pairing.expires_at),
                "expires_in": expires_in(pairing.expires_at, now),
            }
            for pairing in state.pending_pairings(now)
        ]
    finally:
        state.close()
    if out.as_json:
        out.json({"paired": paired, "waiting": waiting})
        return
    _print_listing(out, paired, waiting)


def _print_listing(
    out: Printer, paired: list[dict[str, Any]], waiting: list[dict[str, Any]]
) -> None:
    from rich.table import Table

    def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> Table:
        shown = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        for column in columns:
            shown.add_column(column, overflow="fold")
        for row in rows:
            shown.add_row(*(Text(cell) for cell in row))
        return shown

    if paired:
        rows = [
            (
                p["channel"],
                p["address"],
                p["principal"],
                p["credential_id"],
                human_time(p["paired_at"]),
            )
            for p in paired
        ]
        out.console.print(
            table("Paired", ("CHANNEL", "ADDRESS", "PRINCIPAL", "CREDENTIAL", "SINCE"), rows)
        )
    else:
        out.note("Nobody is paired.")
    if waiting:
        rows = [
            (w["code"], w["channel"], w["address"], w["name"] or "-", w["expires_in"])
            for w in waiting
        ]
        out.console.print(table("Waiting", ("CODE", "CHANNEL", "ADDRESS", "NAME", "EXPIRES"), rows))
        out.note("Approve a code with `tobe admin channels approve CODE`.")
    else:
        out.note("No pairing code is waiting.")


@channels.command()
@click.argument("code")
@click.option(
    "--principal",
    default="",
    help="Who the person talks as (default: you, the local user, as `tobe admin pair`).",
)
@output_options
def approve(code: str, principal: str) -> None:
    """Pair the person who was given CODE: they get a client credential (scopes chat and
    approve) of the principal, and the channel tells them they may talk."""
    from face.channels.state import PairingError, check_approvable, normal_code
    from mind.management import local_user

    state = _open_state()
    if state is None:
        raise click.ClickException(
            f"no pairing code {normal_code(code)!r} is waiting: {NOT_USED_YET}"
        )
    try:
        pairing = state.pairing(code)
        try:
            check_approvable(pairing, code, datetime.now(UTC))
        except PairingError as exc:
            raise click.ClickException(str(exc)) from None
        assert pairing is not None
        request = pb.CreateCredentialRequest(
            kind=pb.CREDENTIAL_KIND_CLIENT,
            principal=principal or local_user(),
            scopes=[CHAT, APPROVE],
            label=f"{pairing.channel} {pairing.address}",
        )
        created = call("CreateCredential", request)
        credential = created.credential
        try:
            state.approve_pairing(
                pairing.code,
                credential.principal,
                credential.id,
                created.secret,
                datetime.now(UTC),
            )
        except (PairingError, sqlite3.Error, OSError) as exc:
            raise click.ClickException(_undo(credential.id, f"pairing failed: {exc}")) from None
    finally:
        state.close()
    out = printer()
    if out.as_json:
        out.json(
            {
                "code": pairing.code,
                "channel": pairing.channel,
                "address": pairing.address,
                "principal": credential.principal,
                "credential_id": credential.id,
            }
        )
        return
    out.note(
        f"Paired {pairing.address} on {pairing.channel} as {credential.principal} "
        f"(credential {credential.id}); the channel tells them they may talk now."
    )


def _undo(credential_id: str, reason: str) -> str:
    """Revoke the credential made for a pairing that was not recorded; the line that says so."""
    try:
        call("RevokeCredential", pb.RevokeCredentialRequest(id=credential_id))
    except click.ClickException as exc:
        return (
            f"{reason}; revoking the credential made for them ({credential_id}) failed too "
            f"({exc.message}): revoke it with `tobe admin credentials revoke {credential_id}`"
        )
    return f"{reason}; the credential made for them ({credential_id}) was revoked"


@channels.command()
@click.argument("channel")
@click.argument("address")
@output_options
def forget(channel: str, address: str) -> None:
    """Unpair the person at ADDRESS on CHANNEL: their credential is revoked, and they are
    asked to pair again if they write."""
    state = _open_state()
    if state is None:
        raise click.ClickException(f"{address} is not paired on {channel}: {NOT_USED_YET}")
    try:
        sender = state.sender(channel, address)
        if sender is None:
            raise click.ClickException(
                f"{address} is not paired on {channel} (`tobe admin channels list` shows who is)"
            )
        revoked = _revoke_if_active(sender.credential_id, sender.principal)
        state.forget_sender(channel, address)
    finally:
        state.close()
    out = printer()
    if out.as_json:
        out.json(
            {
                "channel": channel,
                "address": address,
                "principal": sender.principal,
                "credential_id": sender.credential_id,
                "revoked": revoked,
            }
        )
        return
    what = "was revoked" if revoked else "was no longer active"
    out.note(f"Forgot {address} on {channel}; their credential {sender.credential_id} {what}.")


def _revoke_if_active(credential_id: str, principal: str) -> bool:
    """Revoke the credential unless it is revoked or gone already; whether this revoked it."""
    listed = call(
        "ListCredentials", pb.ListCredentialsRequest(include_revoked=False, principal=principal)
    )
    if not any(found.id == credential_id for found in listed.credentials):
        return False
    call("RevokeCredential", pb.RevokeCredentialRequest(id=credential_id))
    return True
