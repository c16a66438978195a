"""A conversation's memory: named notes that outlive its runs, its context and a restart.

The model keeps them with the memory tools (`tools.py`); the owner lists and deletes them
through the Mind service, Face and `tobe admin`. The rules and quotas (`rules.py`) are the
same whoever writes, and each change commits with its `memory_changed` event (`store.py`).
Deleting a conversation deletes its memory (`mind.management.conversations`).
"""
