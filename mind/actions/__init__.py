"""The entry decision layer (seed 003): extract → evaluate → plan before any action runs.

With `[actions] enabled` (a profile's `actions` overrides it), a run whose starting input is a
person's message or an observation note passes `DecisionLayer.decide` (`layer.py`) after the
input was delivered and before the first model step. The Extractor (one structured call;
ordinary chat ends here, offered read-only tools and leaving no note) finds action tendencies
and the input's answers to pending actions; the Evaluator judges each tendency against the
meta-actions (the tools the conversation is offered now, plus the scheduler's `send_message`);
the Planner orders them with strict dependencies. Outcomes: refused (only the note); needs
confirmation (a pending action and its `action_changed` event); immediate (this run executes
the plan: read-only tools plus the plan's meta-actions); planned (a scheduled action through
`mind.scheduler.records.create_schedule`, in the same unit). The outcome is stored as one
`note` message (payload `kind: decision`) that the model reads.

Each stage's answer is JSON checked against its schema and the stage's own rules
(`structured.py`: held to the schema by the provider where the model allows it, read
tolerantly where not); a bad one is retried once, then the input is answered as plain chat,
with no note about it: the failure is logged and counted for the operator. The stages may run
on a model of their own (`[actions] model` or `provider`). Steering messages, continuation
runs and a firing's proactive run never pass the layer. `records.py` keeps pending
confirmations, decided once by compare-and-set; `expiry.py` expires them for the scheduler's
loop.
"""
