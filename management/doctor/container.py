"""`tobe doctor` in ToBe's container layout (docker/compose.yaml; `tobe.runtime.container`).

There Docker publishes the ports and restarts the services, and each container is its Hand's
boundary: the port, `tobe up` and sandbox checks do not apply and are skipped, in one line
that says so. The other services' credentials are in the Mind's container under
TOBE_PROVISION_DIR, and what repairs them is a restart of the Mind, which provisions them
again at every start, not `tobe doctor --fix`. The checks read the Mind's data directory, so
in another service's container doctor points to the Mind's.
"""

from __future__ import annotations

from management.doctor.ports import check_ports
from management.doctor.report import Finding, Status
from management.doctor.sandbox import check_sandbox
from management.doctor.services import check_services
from management.doctor.state import Doctor
from tobe.runtime.container import COMPOSE

CHECK = "container"
# Checks that do not apply in a container, and why (in the order doctor runs them).
NOT_APPLICABLE = {
    check_ports: "ports (Docker publishes them)",
    check_services: "services (Docker restarts them)",
    check_sandbox: "sandbox (the Hand's container is its boundary)",
}
RESTART_FIX = (
    f"`{COMPOSE} restart mind` provisions them again, then `{COMPOSE} restart face hand awareness`"
)


def container_findings(doctor: Doctor) -> list[Finding]:
    """The line saying what is skipped here; empty outside a container."""
    if doctor.container is None:
        return []
    if doctor.container != "mind":
        text = f"in the {doctor.container} container: the checks read the Mind's data directory"
        return [Finding(Status.SKIP, CHECK, text, f"`{COMPOSE} exec mind tobe doctor`")]
    skipped = ", ".join(NOT_APPLICABLE.values())
    return [Finding(Status.SKIP, CHECK, f"in the mind container: checks skipped: {skipped}")]
