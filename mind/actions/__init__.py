"""The entry decision layer (seed 003): extract → evaluate → plan before any action runs.

`DecisionLayer` (`layer.py`) is the entry point; `records.py` keeps pending confirmations and
`expiry.py` expires them for the scheduler's loop.
"""
