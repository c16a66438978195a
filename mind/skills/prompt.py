"""How skills appear in the system prompt: `always` skills in full, the rest as an index.

The index carries names and descriptions only, so the prompt stays short however many skills
there are; the model reads a body with `view_skill` when it needs one.
"""

from __future__ import annotations

from mind.skills.catalog import Skill

VIEW_SKILL = "view_skill"
INDEX_HEADER = (
    f"Skills you can use: call `{VIEW_SKILL}` with a skill's name to read its instructions "
    "before following them."
)


def skills_prompt(skills: list[Skill]) -> str:
    """The always-skills inline (name, then body), then the index of the others; "" if none."""
    inline = [f"Skill: {s.name}\n\n{s.body}" for s in skills if s.always]
    indexed = [f"- {s.name}: {s.description}" for s in skills if not s.always]
    index = [INDEX_HEADER + "\n" + "\n".join(indexed)] if indexed else []
    return "\n\n".join([*inline, *index])
