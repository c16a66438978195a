"""`tobe admin credentials …`: create, list, show, revoke, rotate."""

from __future__ import annotations

import click

from management import render
from management.cli_support import call, output_options, parse_when, printer
from tobe.runtime.timestamps import to_timestamp
from tobe.scopes import valid_scopes
from tobe.v1 import management_pb2 as pb

KIND_TO_PROTO = {name: kind for kind, name in render.KIND_NAMES.items()}
KINDS = click.Choice(sorted(KIND_TO_PROTO))


def closed_note(disconnected: int, unreported_gateways: int) -> str:
    """How many live connections a revocation closed, and which gateways did not say."""
    note = f"closed {disconnected} live connection(s)."
    if unreported_gateways:
        note += (
            f" {unreported_gateways} gateway(s) did not report in time: their connections of "
            "this credential are closed too, but not counted."
        )
    return note


@click.group()
def credentials() -> None:
    """Credentials of clients, Hands and services."""


@credentials.command()
@click.option("--kind", required=True, type=KINDS, help="Who uses it: client, hand or service.")
@click.option("--principal", required=True, help="The name it authenticates as.")
@click.option(
    "--scope", "scopes", multiple=True, help=f"A scope it grants (repeatable): {valid_scopes()}."
)
@click.option(
    "--expires", help="When it stops working: a time (2026-12-31T18:00Z) or a duration (90d)."
)
@click.option("--label", default="", help="A note for people, e.g. where it is used.")
@output_options
def create(
    kind: str, principal: str, scopes: tuple[str, ...], expires: str | None, label: str
) -> None:
    """Create a credential and print its secret, once."""
    request = pb.CreateCredentialRequest(
        kind=KIND_TO_PROTO[kind],
        principal=principal,
        scopes=list(scopes),
        expires_at=to_timestamp(parse_when(expires, ago=False)) if expires else None,
        label=label,
    )
    response = call("CreateCredential", request)
    out = printer()
    out.credential(render.credential(response.credential), extra={"secret": response.secret})
    if not out.as_json:
        out.secret(response.secret)


@credentials.command("list")
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked credentials.")
@click.option("--principal", default="", help="Only this principal's credentials.")
@click.option("--kind", type=KINDS, help="Only credentials of this kind.")
@output_options
def list_(include_revoked: bool, principal: str, kind: str | None) -> None:
    """List credentials (never their secrets)."""
    response = call(
        "ListCredentials",
        pb.ListCredentialsRequest(
            include_revoked=include_revoked,
            principal=principal,
            kind=KIND_TO_PROTO[kind] if kind else pb.CREDENTIAL_KIND_UNSPECIFIED,
        ),
    )
    printer().credentials([render.credential(c) for c in response.credentials])


@credentials.command()
@click.argument("credential_id")
@output_options
def show(credential_id: str) -> None:
    """Show one credential."""
    response = call("GetCredential", pb.GetCredentialRequest(id=credential_id))
    printer().credential(render.credential(response.credential))


@credentials.command()
@click.argument("credential_id")
@output_options
def revoke(credential_id: str) -> None:
    """Revoke a credential; connected peers using it are disconnected at once."""
    response = call("RevokeCredential", pb.RevokeCredentialRequest(id=credential_id))
    out = printer()
    out.credential(
        render.credential(response.credential),
        extra={
            "disconnected": response.disconnected,
            "unreported_gateways": response.unreported_gateways,
        },
    )
    out.note(
        f"\nRevoked {response.credential.id}; "
        + closed_note(response.disconnected, response.unreported_gateways)
    )


@credentials.command()
@click.argument("credential_id")
@output_options
def rotate(credential_id: str) -> None:
    """Replace a credential with a new secret; the old one is revoked."""
    response = call("RotateCredential", pb.RotateCredentialRequest(id=credential_id))
    out = printer()
    out.credential(
        render.credential(response.credential),
        extra={
            "secret": response.secret,
            "revoked_id": response.revoked_id,
            "disconnected": response.disconnected,
            "unreported_gateways": response.unreported_gateways,
        },
    )
    if not out.as_json:
        out.note(
            f"\nRevoked {response.revoked_id}; "
            + closed_note(response.disconnected, response.unreported_gateways)
        )
        out.secret(response.secret)
