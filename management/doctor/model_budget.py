"""How the configured model's window is divided, as the running Mind measures it: the reply's
share, the reserve, and what every request carries before the conversation (instructions,
persona, catalogs, tool schemas). A small local model can spend most of its window there."""

from __future__ import annotations

import asyncio

from management.connection import ManagementUnavailable
from management.doctor.calls import status
from management.doctor.report import Finding, Status
from management.doctor.state import Doctor

CHECK = "model budget"
# Above this share of the prompt limit, the overhead leaves too little for a conversation.
CROWDED = 0.5


def check_model_budget(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    if not doctor.online:
        return [
            Finding(
                Status.SKIP,
                CHECK,
                "measured by the running Mind; ToBe is not running on this data directory",
            )
        ]
    try:
        found = asyncio.run(status(settings))
    except ManagementUnavailable as exc:
        return [Finding(Status.FAIL, CHECK, str(exc))]
    if not found.HasField("model_budget"):
        return [Finding(Status.SKIP, CHECK, "no window is enforced (the offline demo)")]
    budget = found.model_budget
    left = budget.prompt_limit - budget.overhead_tokens
    source = f" from {budget.window_source}" if budget.window_source else ""
    text = (
        f"{budget.model}: window {budget.context_window:,} tokens{source}; "
        f"{budget.output_tokens:,} kept for the reply and {budget.reserve_tokens:,} in reserve; "
        f"every request of profile {budget.profile!r} carries ~{budget.overhead_tokens:,} "
        f"tokens of instructions, catalogs and {budget.tools} tool schemas, leaving "
        f"~{max(left, 0):,} for the conversation; structured output: "
        f"{budget.structured_output}"
    )
    if budget.overhead_tokens > CROWDED * budget.prompt_limit:
        return [
            Finding(
                Status.WARN,
                CHECK,
                text,
                "serve the model with a larger window (llama-server -c, Ollama num_ctx or "
                "OLLAMA_CONTEXT_LENGTH, vLLM --max-model-len, LM Studio's context length), or "
                "give the profile fewer tools (platform_tools, hand_tools)",
            )
        ]
    return [Finding(Status.OK, CHECK, text)]
