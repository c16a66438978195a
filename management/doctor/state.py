"""What the checks share: the settings (when they load), `--fix`, and facts found on the way."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tobe.config import Settings


@dataclass
class Doctor:
    fix: bool
    # None when the configuration does not load; checks that need it then skip.
    settings: Settings | None = None
    # Whether the Mind serves its management socket (ToBe is running on this data directory).
    online: bool = False
    # The store's schema revision ("" when it has none); None when it could not be read.
    store_revision: str | None = None
    # Whether the store is at the revision this ToBe's migrations end at.
    store_current: bool = False
    # The service whose container this is (`tobe.runtime.container`); None outside one.
    container: str | None = None
    # In the Mind's container: where the other services' credentials are provisioned.
    services_dir: Path | None = None
