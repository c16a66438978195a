"""Scheduled actions: the Mind acting by itself at a time, on an interval, on a cron schedule,
or when an observation or a memory write matches.

An action is created (`records.create_schedule`, by the decision layer) with its trigger checked
and its first due time computed in the owner's zone and stored in UTC (`triggers.py`). The loop
(`service.py`) claims due actions in one unit: a `firings` row per occasion (unique per action,
so a replayed claim inserts nothing), the next due time moved, `schedule_changed` emitted; only
then is each claim handed to its delivery (`FiringDelivery`), which queues the firing as an
input of its conversation. Conditions claim the same way (`conditions.py`): the Awareness
router shows each delivered observation before it records the batch as seen, and memory writes
are read from the outbox after a stored cursor advanced in the claiming unit. Owners change
actions through `Mind.ChangeSchedule`, operators through Management; the loop hears the commit.
`clock.py` is the Mind's one clock (system, or `[scheduler] clock_file` for rehearsals).
"""
