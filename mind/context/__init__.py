"""Context that lasts: the token budget of a provider request, and compaction.

The budget (`budget.py`) is the model's window minus the requested output and a reserve;
`TokenEstimator` counts a request as the provider's last reported usage plus the new characters
at a ratio calibrated per conversation. `AgentCore` compacts before a request over budget and
after a provider's context overflow (once per step); the actor runs a requested compaction
between runs under the mutation lease. The engine (`engine.py`) cuts between tool batches, so a
tool call never loses its results, summarises in chunks that each fit the window, and commits
the summary with its `context_compacted` event only if the conversation's context generation is
still the one it read (`records.py`); a run restores the latest summary and the messages after
it, never the history before.
"""
