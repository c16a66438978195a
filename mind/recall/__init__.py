"""Recall: full-text (and, when configured, semantic) search over what a person may see of
their conversations: messages, tool results, compaction summaries and memory entries.

Modules: `terms` (words, as both backends index them), `query` (the query language and its
translation), `entries` (what is indexed, and when), `indexer` (the background task that
follows the outbox), `search` (the viewer's matches), `conversations` (the matches grouped
by conversation, for `SearchConversations`), `semantic` (embeddings, search by meaning and
its fusion with the keyword rank), `tool` (the model's `recall` tool).
"""
