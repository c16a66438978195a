"""The Mind's current skills: what a run's system prompt and tools are built from.

`reload` loads the directories again and swaps the catalog in one assignment, so a run that
already started keeps the prompt it was given and the next run reads the new one. It is the
prompt catalog (`mind.core.prompt.PromptCatalog`) and the tool source of `view_skill`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from mind.skills.catalog import DEFAULT_PROFILE, Skill, SkillCatalog
from mind.skills.loader import load_catalog
from mind.skills.prompt import VIEW_SKILL, skills_prompt
from mind.skills.tool import ViewSkillTool
from mind.tools.base import Tool

log = logging.getLogger(__name__)


class SkillStore:
    tool_name = VIEW_SKILL

    def __init__(self, dirs: Sequence[Path]) -> None:
        self.dirs = list(dirs)
        self.catalog = SkillCatalog()
        # The last version seen of every name, for revisions across reloads.
        self._known: dict[str, Skill] = {}
        self._tool = ViewSkillTool(lambda: self.catalog)

    def reload(self) -> SkillCatalog:
        """Load every directory again; problems are logged once each and kept in the catalog."""
        catalog = load_catalog(self.dirs, self._known)
        self._report(self.catalog, catalog)
        self._known.update(catalog.skills)
        self.catalog = catalog
        return catalog

    def catalog_for(
        self, conversation_key: str, profile: str = DEFAULT_PROFILE, *, with_tool: bool = True
    ) -> str:
        """Without `view_skill` only the always-skills, whose bodies the prompt carries."""
        visible = self.catalog.visible(conversation_key, profile)
        return skills_prompt(visible if with_tool else [s for s in visible if s.always])

    def tools_for(self, conversation_key: str) -> list[Tool]:
        visible = self.catalog.visible(conversation_key)
        return [self._tool] if any(not skill.always for skill in visible) else []

    @staticmethod
    def _report(before: SkillCatalog, after: SkillCatalog) -> None:
        for problem in after.errors:
            if problem not in before.errors:
                log.warning("skill skipped: %s", problem)
        for clash in after.shadowed:
            if clash not in before.shadowed:
                log.warning(
                    "skill %r in %s shadows the one in %s", clash.name, clash.kept, clash.shadowed
                )
        changed = [
            f"{s.name} r{s.revision}"
            for s in after.skills.values()
            if before.skills.get(s.name) != s
        ]
        if changed:
            log.info("skills loaded: %s", ", ".join(changed))
