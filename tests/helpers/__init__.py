"""Helpers shared by tests of several areas (real processes, stores)."""
