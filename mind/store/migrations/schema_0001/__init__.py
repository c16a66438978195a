"""The tables, indexes and triggers revision 0001 creates, one module per domain.

They live outside `versions/` because alembic loads every module there as a revision. Like
the revision, they are frozen: a later schema change is a new revision, never an edit here.
"""
