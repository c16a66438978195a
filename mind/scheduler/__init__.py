"""Schedules: triggers, conditions and firings of scheduled actions, on the Mind's clock."""
