"""LLM providers behind one interface (`mind.providers.base.Provider`)."""
