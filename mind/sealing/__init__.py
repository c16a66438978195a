"""Sealed turns: a turn that may read someone's sensitive data keeps no readable copy of it.

A run is *sealed* when, at its start, its conversation can call a sensitive tool (a Hand tool
whose `ToolSpec.sensitive` is set). A sealed run gets a random AES-256-GCM key (`turn_keys`),
and everything of it that may carry raw values is written encrypted under that key: tool-call
arguments and thinking, tool results, the transparent projections, Hand task arguments and
outputs, and the outbox payloads announcing them. The reply text is written as it is.

When the run ends having called a sensitive tool, its key row is deleted in the run's finish
unit (crypto-shredding; on SQLite with `secure_delete`, then a TRUNCATE checkpoint of the WAL)
and the run records which datasets were queried with what status (`runs.redaction`). From
then on every reader renders that replacement instead of the sealed values. A sealed run that
called none keeps its key, and its values stay readable as if it had never been sealed.

Runs that cannot call a sensitive tool are not touched: nothing here runs for them.

Modules: `cipher` (the envelopes), `keyring` (the keys a process knows, and opening),
`forms` (what a sealed row stores), `turns` (the store side: a key's birth and death),
`limits` (how much of a sensitive result is kept),
`sensitivity` (which tools are sensitive).
"""
