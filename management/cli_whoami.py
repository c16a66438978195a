"""`tobe admin whoami`: which credential a token is, so a person knows their principal.

The token comes from `--token-file`, else `TOBE_CHAT_TOKEN` or `TOBE_HAND_TOKEN`, else the local
user's client credential that `tobe up` wrote (`<data_dir>/credentials/client.token`). The
Management service (online or offline, as every `tobe admin` command) finds the credential by
its non-secret prefix (`tobe_<prefix>_…`) and says whether the secret is that credential's, so
a mistyped token is told apart from a working one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from management import render
from management.cli_support import AdminOptions, call, output_options, printer
from tobe.runtime import tokens
from tobe.v1 import management_pb2 as pb

TOKEN_VARIABLES = ("TOBE_CHAT_TOKEN", "TOBE_HAND_TOKEN")


@dataclass(frozen=True)
class Presented:
    """A token and where it came from (a file path or a variable name), for the output."""

    token: str
    source: str


def presented(token_file: Path | None, credentials_dir: Path) -> Presented:
    """The token to identify: the file given, a variable, else the local client credential."""
    if token_file is None:
        for name in TOKEN_VARIABLES:
            value = os.environ.get(name, "").strip()
            if value:
                return Presented(value, name)
        token_file = tokens.token_file(credentials_dir, "client")
    try:
        token = token_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise click.ClickException(
            f"cannot read the credential {token_file}: {reason} (pass --token-file, set "
            "TOBE_CHAT_TOKEN or TOBE_HAND_TOKEN, or run `tobe up` once to create your own)"
        ) from None
    if not token:
        raise click.ClickException(f"the credential file {token_file} is empty")
    return Presented(token, str(token_file))


def serves(item: dict[str, Any]) -> list[str]:
    """Whose conversations a Hand with this credential executes for (see hand.proto)."""
    if "serve-all" in item["scopes"]:
        return ["everyone"]
    others = [
        scope.removeprefix("serve:") for scope in item["scopes"] if scope.startswith("serve:")
    ]
    return sorted({item["principal"], *others})


@click.command()
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File holding the credential (default: TOBE_CHAT_TOKEN, TOBE_HAND_TOKEN, else yours).",
)
@output_options
def whoami(token_file: Path | None) -> None:
    """Who a credential authenticates as: principal, kind, scopes, expiry and state.

    Without --token-file: the credential in TOBE_CHAT_TOKEN or TOBE_HAND_TOKEN, else your own
    (the client credential `tobe up` created). A Hand serving you needs `serve:<principal>`.
    """
    settings = click.get_current_context().ensure_object(AdminOptions).settings()
    given = presented(token_file, settings.credentials_dir)
    if not given.token.startswith("tobe_"):
        raise click.ClickException(
            f"the credential from {given.source} is not a ToBe credential "
            "(those look like tobe_<prefix>_<secret>)"
        )
    identified: pb.IdentifyCredentialResponse = call(
        "IdentifyCredential", pb.IdentifyCredentialRequest(token=given.token)
    )
    found = render.credential(identified.credential)
    if not identified.secret_matches:
        raise click.ClickException(
            f"the credential from {given.source} carries the prefix of {found['id']} "
            f"({found['kind']} of {found['principal']}) but not its secret: it is mistyped or "
            "altered, and authenticates as nobody"
        )
    printer().whoami({"source": given.source, "serves": serves(found), "credential": found})
    if found["state"] != "active":
        raise click.ClickException(
            f"this credential is {found['state']}; it no longer authenticates "
            f"(create a new one with `tobe admin credentials create --kind {found['kind']} "
            f"--principal {found['principal']}`)"
        )
