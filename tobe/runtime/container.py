"""Whether this process runs in ToBe's container layout (docker/Dockerfile, docker/compose.yaml).

The image sets `TOBE_SERVICE` (compose names each container's service in it), so its presence
says: settings come from docker/.env rather than a configuration file, each service's
credentials live in its own volume (`/credentials/<service>` in the Mind's container), and the
operator acts with `docker compose` commands.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SERVICE_VARIABLE = "TOBE_SERVICE"
# Where the Mind's container keeps the other services' credentials, one directory each
# (`tobe mind serve --provision`, which reads it too).
PROVISION_VARIABLE = "TOBE_PROVISION_DIR"
# The compose command every documented step runs with (docs/docker.md).
COMPOSE = "docker compose -f docker/compose.yaml"


def container_service(environ: Mapping[str, str] = os.environ) -> str | None:
    """The service this container runs (mind, face, hand, awareness), or None outside one."""
    return environ.get(SERVICE_VARIABLE) or None


def provision_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The other services' credentials directory in the Mind's container, or None."""
    value = environ.get(PROVISION_VARIABLE)
    return Path(value) if value else None
