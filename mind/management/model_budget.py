"""How the configured model's window is divided, for `tobe doctor` and `tobe admin status`.

Measured on the running Mind, as a conversation of the default profile would send its first
request: the platform's instructions, the persona, the catalogs and every tool schema the
profile offers count, at the estimate's default characters per token (a conversation's own
ratio is calibrated later against the usage its provider reports).
"""

from __future__ import annotations

from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolClash
from mind.management.records import ModelBudgetInfo
from mind.profiles.book import ProfileBook
from mind.providers.catalog import ModelInfo

# No conversation has this key: its requests carry no Hand chosen for it and no calibration.
_PROBE_KEY = "status:model-budget"


def model_budget(core: AgentCore, profiles: ProfileBook) -> ModelBudgetInfo | None:
    """None when no window is enforced (the offline demo) or the default profile is bad."""
    engine = core.compaction
    profile = profiles.declared("")
    if engine is None or profile is None:
        return None
    try:
        tools = len(core.registry.tools_for(_PROBE_KEY, profile))
        overhead = core.fixed_tokens(_PROBE_KEY, profile)
    except ToolClash:
        return None
    finally:
        engine.estimator.forget(_PROBE_KEY)
    info = getattr(core.provider, "info", None)
    budget = engine.budget
    return ModelBudgetInfo(
        model=core.provider.model,
        context_window=budget.context_window,
        window_source=info.window_source if isinstance(info, ModelInfo) else "",
        output_tokens=budget.output_tokens,
        reserve_tokens=budget.reserve_tokens,
        prompt_limit=budget.prompt_limit,
        overhead_tokens=overhead,
        tools=tools,
        profile=profiles.default,
        structured_output=info.structured_output if isinstance(info, ModelInfo) else "none",
    )
