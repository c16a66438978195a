"""Refusals of the scheduler; each servicer that surfaces them maps each to one status code.

SchedulerError
├── InvalidTrigger        INVALID_ARGUMENT     the trigger cannot be scheduled; nothing written
├── InvalidChange         INVALID_ARGUMENT     the request names no change (pause, resume, delete)
├── ScheduleNotFound      NOT_FOUND            unknown, or not the caller's to see
└── WrongScheduleState    FAILED_PRECONDITION  the action's state forbids the change
"""

from __future__ import annotations


class SchedulerError(Exception):
    """Base of the scheduler's refusals; the message says what to do about it."""


class InvalidTrigger(SchedulerError):
    pass


class InvalidChange(SchedulerError):
    pass


class ScheduleNotFound(SchedulerError):
    pass


class WrongScheduleState(SchedulerError):
    pass
