"""Hands: executors on the user's devices that dial the Mind (SDK and the reference Hand)."""
