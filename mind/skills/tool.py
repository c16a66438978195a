"""`view_skill`: the model reads the body of a skill the prompt index named.

Only skills the conversation sees can be read; asking for another is answered with an error
that lists the ones it may read, so the model can correct itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mind.skills.catalog import DEFAULT_PROFILE, SkillCatalog
from mind.skills.prompt import VIEW_SKILL
from mind.tools.base import Effect, ToolContext, ToolOutcome


class ViewSkillTool:
    name = VIEW_SKILL
    description = (
        "Read the instructions of one skill from the skills index in the system prompt, "
        "by its exact name."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "description": "the skill's name"}
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    effect = Effect.READ_ONLY
    hand_id = ""

    def __init__(self, catalog: Callable[[], SkillCatalog], profile: str = DEFAULT_PROFILE) -> None:
        self._catalog = catalog
        self._profile = profile

    def render_decision(self, arguments: dict[str, Any]) -> str:
        return f"read the skill {arguments['name']!r}"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        visible = self._catalog().visible(context.conversation_key, self._profile)
        skill = next((s for s in visible if s.name == arguments["name"]), None)
        if skill is None:
            names = ", ".join(s.name for s in visible) or "none"
            return ToolOutcome(
                ok=False,
                error=f"no skill named {arguments['name']!r} here; skills you can read: {names}",
            )
        header = f"Skill {skill.name} (revision {skill.revision}, sha256 {skill.digest})"
        return ToolOutcome(ok=True, output=f"{header}\n\n{skill.body}")
