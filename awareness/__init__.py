"""Awareness: the adapter service through which the agent perceives and acts on its environment."""
