"""Conversations: the manager, one actor per conversation, the inputs queue and the run journal."""
