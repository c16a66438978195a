"""Agent core: the provider view, the agent loop and the history types they share."""
