"""The Mind's current resources: the prompt catalog and the `read_resource` tool source.

`reload` swaps the catalog in one assignment; a run reads it when it starts. With no
resources there is neither a catalog in the prompt nor a `read_resource` tool.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from mind.resources.catalog import ResourceCatalog
from mind.resources.tool import ReadResourceTool
from mind.tools.base import Tool

log = logging.getLogger(__name__)


class ResourceStore:
    def __init__(self, dirs: Sequence[Path]) -> None:
        self.dirs = list(dirs)
        self.catalog = ResourceCatalog()
        self._tool = ReadResourceTool(lambda: self.catalog)

    def reload(self) -> ResourceCatalog:
        catalog = ResourceCatalog.load(self.dirs)
        if catalog.resources.keys() != self.catalog.resources.keys():
            log.info("resources loaded: %d documents", len(catalog.resources))
        self.catalog = catalog
        return catalog

    def catalog_for(self, conversation_key: str, profile: str = "") -> str:
        """Every conversation sees every resource, whatever its profile."""
        return self.catalog.prompt()

    def tools_for(self, conversation_key: str) -> list[Tool]:
        return [self._tool] if self.catalog.resources else []
