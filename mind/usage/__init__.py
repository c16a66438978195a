"""Token usage: every model request the Mind makes, recorded with what it was for.

The Mind wraps each provider it builds in `MeteredProvider` (`metered.py`), which reads who
the request serves from a context variable (`attribution.py`: set where a run, a compaction,
a decision stage or a review starts) and hands one row per request to the `UsageLedger`
(`ledger.py`), which writes rows in batches. `reports.py` sums the rows by day,
conversation, model or purpose, with an estimated cost from `mind.providers.prices`.
"""
