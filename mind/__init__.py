"""The Mind: agent core, providers, conversations, store, approvals and remote execution."""
