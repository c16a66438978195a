"""The Mind's current resources: the prompt catalog and the `read_resource` tool source.

`reload` swaps the catalog in one assignment; a run reads it when it starts. With no
resources there is neither a catalog in the prompt nor a `read_resource` tool, and a profile
without `read_resource` gets no catalog either.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from mind.resources.catalog import READ_RESOURCE, ResourceCatalog
from mind.resources.tool import ReadResourceTool
from mind.tools.base import Tool

log = logging.getLogger(__name__)


class ResourceStore:
    tool_name = READ_RESOURCE

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

    def catalog_for(
        self, conversation_key: str, profile: str = "", *, with_tool: bool = True
    ) -> str:
        """Every conversation whose profile offers `read_resource` sees every resource."""
        return self.catalog.prompt() if with_tool else ""

    def tools_for(self, conversation_key: str) -> list[Tool]:
        return [self._tool] if self.catalog.resources else []
