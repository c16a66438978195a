"""`tobe admin pair`: a one-time code and link with which a browser signs in to the web client.

The code is made by the Management service (online or offline, like every admin command) and
printed here, once; the store keeps only its hash. The link is the web client's sign-in page
with the code in its fragment: the address Face published for its web client when it runs,
else the configured one: `face.web.public_url` as it stands (the web client may be served from
elsewhere, as in Docker where Face runs in its own container), else `face.web.listen` with a
note that the web client is not running, so the person knows to start it before opening the
link.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import click

from management.cli_support import AdminOptions, call, output_options, printer
from tobe.config import Settings
from tobe.runtime.addresses import published
from tobe.runtime.web_url import pair_url, web_base_url
from tobe.v1 import management_pb2 as pb

WEB_SERVICE = "web"
_TTL = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?")
# The request carries an int32; the service refuses anything above its own maximum.
_MAX_SECONDS = 2**31 - 1


def ttl_seconds(text: str) -> int:
    """Seconds in `300`, `300s`, `5m`, `1h` or `4m30s`; a one-line error for anything else."""
    match = _TTL.fullmatch(text.strip())
    if match is None or not any(match.groups()):
        seconds = 0
    else:
        hours, minutes, rest = (int(part or 0) for part in match.groups())
        seconds = hours * 3600 + minutes * 60 + rest
    if not 0 < seconds <= _MAX_SECONDS:
        raise click.ClickException(
            f"--ttl {text!r} is not a time a code can live: use seconds (300, 300s), minutes "
            "(5m) or hours (1h), at most 1h"
        )
    return seconds


def web_base(settings: Settings) -> tuple[str, str]:
    """The web client's base URL and, when it is not running, a note saying so."""
    web = settings.face.web
    running = published(settings.data_dir).get(WEB_SERVICE)
    if running is not None:
        # A web client serving TLS publishes the CA that verifies it.
        tls = bool(running.ca_file)
        return web_base_url(running.address, tls=tls, public_url=web.public_url), ""
    tls = web.tls.cert_file is not None
    base = web_base_url(web.listen, tls=tls, public_url=web.public_url)
    if not web.enabled:
        return base, (
            "The web client is turned off (face.web.enabled = false): turn it on and start "
            "Face before opening the link."
        )
    if web.public_url:
        return base, ""
    return base, "The web client is not running: start it (`tobe up`) before opening the link."


def expires_in(expires_at: datetime, now: datetime) -> str:
    """`in 5 min`, `in 45 s`: how long is left, for people."""
    seconds = max(0, round((expires_at - now).total_seconds()))
    if seconds < 60:
        return f"in {seconds} s"
    return f"in {round(seconds / 60)} min"


@click.command()
@click.option(
    "--principal", default="", help="Who the device signs in as (default: you, the local user)."
)
@click.option(
    "--ttl",
    default="5m",
    show_default=True,
    help="How long the code works: seconds (300), 300s, 5m or 1h (at most 1h).",
)
@output_options
def pair(principal: str, ttl: str) -> None:
    """Make a one-time code with which a browser signs in to the web client.

    Open the printed link on the device (or type the code on the web client's sign-in page)
    before the code expires: it becomes a client credential of the principal with scopes
    chat and approve, which the device keeps until it signs out or you revoke it.
    """
    # Imported here like the rest of the Mind's stack: `tobe --help` stays light.
    from mind.management import local_user

    seconds = ttl_seconds(ttl)
    request = pb.ManagementCreatePairingCodeRequest(
        principal=principal or local_user(), ttl_seconds=seconds
    )
    pairing = call("CreatePairingCode", request).pairing
    settings = click.get_current_context().ensure_object(AdminOptions).settings()
    base, note = web_base(settings)
    expires_at = pairing.expires_at.ToDatetime(tzinfo=UTC)
    local = expires_at.astimezone()
    printer().pairing(
        {
            "code": pairing.code,
            "principal": pairing.principal,
            "expires_at": expires_at.isoformat().replace("+00:00", "Z"),
            "url": pair_url(base, pairing.code),
        },
        expires=f"{local:%Y-%m-%d %H:%M:%S %Z} ({expires_in(expires_at, datetime.now(UTC))})",
        note=note,
    )
