"""The checks in the order `tobe doctor` runs them; each may rely on what earlier ones found.

The configuration is checked first, on its own (`configuration.check_config`): the others
read the settings it loads.
"""

from __future__ import annotations

from collections.abc import Callable

from management.doctor.backup import check_backup
from management.doctor.channels import check_channels
from management.doctor.cluster import check_cluster
from management.doctor.credentials import check_credentials
from management.doctor.encoding import check_locale
from management.doctor.hands import check_hands
from management.doctor.model_budget import check_model_budget
from management.doctor.openai_api import check_openai_api
from management.doctor.permissions import check_permissions
from management.doctor.ports import check_ports
from management.doctor.postgresql import check_postgresql
from management.doctor.provider import check_provider
from management.doctor.report import Finding
from management.doctor.sandbox import check_sandbox
from management.doctor.scopes import check_scopes_held
from management.doctor.services import check_services
from management.doctor.state import Doctor
from management.doctor.store import check_store
from management.doctor.telemetry import check_telemetry
from management.doctor.versions import check_versions

Check = Callable[[Doctor], list[Finding]]

CHECKS: tuple[Check, ...] = (
    check_locale,
    check_permissions,
    check_ports,
    check_store,
    check_postgresql,
    check_cluster,
    check_credentials,
    check_scopes_held,
    check_provider,
    check_hands,
    check_model_budget,
    check_services,
    check_sandbox,
    check_backup,
    check_telemetry,
    check_openai_api,
    check_channels,
    check_versions,
)
