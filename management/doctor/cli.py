"""`tobe doctor [--fix]`: run every check, print one line per finding, exit 1 on any FAIL."""

from __future__ import annotations

import click

from management.connection import socket_answers
from management.doctor.checks import CHECKS
from management.doctor.configuration import check_config
from management.doctor.container import NOT_APPLICABLE, container_findings
from management.doctor.report import Finding, Status, line
from management.doctor.state import Doctor
from tobe.runtime.container import container_service, provision_dir


@click.command("doctor")
@click.option(
    "--fix",
    is_flag=True,
    help="Repair what can be repaired (file permissions, local credentials, the store's "
    "schema) and say what changed.",
)
def doctor(fix: bool) -> None:
    """Check the configuration, ports, locale, permissions, credentials and their scopes,
    store (on PostgreSQL also the server, and this Mind's address among several), provider,
    Hands, the services of a running `tobe up`, the command sandbox, the last backup and
    versions; one line each, with its fix."""
    state = Doctor(fix=fix, container=container_service(), services_dir=provision_dir())
    _show(container_findings(state))
    if state.container not in (None, "mind"):
        return  # the checks run in the Mind's container
    findings = check_config(state)
    if state.settings is not None:
        state.online = socket_answers(state.settings.management_socket)
    failed = _show(findings)
    for check in CHECKS:
        if state.container is None or check not in NOT_APPLICABLE:
            failed = _show(check(state)) or failed
    if failed:
        raise SystemExit(1)


def _show(findings: list[Finding]) -> bool:
    """Print each finding; True when one of them failed."""
    for finding in findings:
        click.echo(line(finding))
    return any(finding.status is Status.FAIL for finding in findings)
