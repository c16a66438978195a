"""Context that lasts: the token budget of a provider request, and compaction."""
