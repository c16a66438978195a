"""Skills and resources in a real Mind process: the prompt carries them, the tools read them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import running_mind

from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e

BREWING = """\
---
name: brewing
description: How to brew coffee with the office machine.
---
Grind the beans medium-fine.
"""
TONE = """\
---
name: tone
description: How to speak.
always: true
---
Always answer in short sentences.
"""
TEAM_ONLY = """\
---
name: rota
description: The kitchen rota.
groups: ["g_*"]
---
Mondays: Bob.
"""
BEANS = "# Beans\n\nThe office buys Ethiopian Yirgacheffe.\n"

# Each step checks one part of the system prompt: the inlined always-skill, the skills index
# (without the group-only skill), the resources catalog; the tool results come back in turn.
SCRIPT = """
runs:
  - match: "^coffee"
    steps:
      - expect: {system_contains: "Skill: tone\\n\\nAlways answer in short sentences.",
                 tools_include: [view_skill, read_resource]}
        tool_calls: [{name: view_skill, arguments: {name: brewing}}]
      - expect: {last_role: tool, last_contains: "Grind the beans medium-fine.",
                 system_contains: "- brewing: How to brew coffee with the office machine."}
        tool_calls: [{name: view_skill, arguments: {name: rota}}]
      - expect: {last_role: tool, last_is_error: true, last_contains: "you can read: brewing, tone"}
        tool_calls: [{name: read_resource, arguments: {path: office/beans.md}}]
      - expect: {last_role: tool, last_contains: "Ethiopian Yirgacheffe",
                 system_contains: "exactly as listed here.\\n- office/beans.md"}
        tool_calls: [{name: read_resource, arguments: {path: ../tobe.db}}]
      - expect: {last_role: tool, last_is_error: true, last_contains: "not in the resources"}
        text: "Medium-fine, Ethiopian beans."
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    root = tmp_path_factory.mktemp("skills-mind")
    # The default places: `<data_dir>/skills` and `<data_dir>/resources`.
    skills, resources = root / "data" / "skills", root / "data" / "resources"
    (skills / "kitchen").mkdir(parents=True)
    (resources / "office").mkdir(parents=True)
    (skills / "kitchen" / "brewing.skill.md").write_text(BREWING, encoding="utf-8")
    (skills / "tone.skill.md").write_text(TONE, encoding="utf-8")
    (skills / "rota.skill.md").write_text(TEAM_ONLY, encoding="utf-8")
    (resources / "office" / "beans.md").write_text(BEANS, encoding="utf-8")
    script = root / "script.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    with running_mind(root, script=script) as mind:
        client = Gateway.connect(mind)
        try:
            yield client
        finally:
            client.close()


def test_a_run_sees_skills_and_resources_in_its_prompt_and_reads_them_with_the_tools(
    gateway: Gateway,
) -> None:
    key = gateway.create("p_coffee")
    start = gateway.head()
    sent = gateway.send(key, "coffee please", "k1")

    events = gateway.wait_runs_ended(start, {sent.run_id})

    ended = [r for r in payloads(events, "run_changed") if r.id == sent.run_id][-1]
    assert (ended.state, ended.reason) == (common_pb2.RUN_STATE_COMPLETED, "")
    results = [m for m in gateway.history(key).messages if m.role == common_pb2.MESSAGE_ROLE_TOOL]
    skill, refused_skill, resource, refused_resource = results
    digest = hashlib.sha256(BREWING.encode()).hexdigest()
    assert skill.text == (
        f"Skill brewing (revision 1, sha256 {digest})\n\nGrind the beans medium-fine."
    )
    assert refused_skill.is_error and "Mondays" not in refused_skill.text
    assert resource.text == BEANS and not resource.is_error
    assert refused_resource.is_error
