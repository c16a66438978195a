"""`tobe doctor [--fix]`: run every check, print one line per finding, exit 1 on any FAIL."""

from __future__ import annotations

import click

from management.connection import socket_answers
from management.doctor.checks import CHECKS
from management.doctor.report import Status, line
from management.doctor.state import Doctor


@click.command("doctor")
@click.option(
    "--fix",
    is_flag=True,
    help="Repair what can be repaired (file permissions, local credentials, the store's "
    "schema) and say what changed.",
)
def doctor(fix: bool) -> None:
    """Check the configuration, ports, locale, permissions, credentials, store, provider,
    Hands and versions; one line each, with its fix."""
    state = Doctor(fix=fix)
    failed = False
    for check in CHECKS:
        for finding in check(state):
            click.echo(line(finding))
            failed = failed or finding.status is Status.FAIL
        if check is CHECKS[0] and state.settings is not None:
            state.online = socket_answers(state.settings.management_socket)
    if failed:
        raise SystemExit(1)
