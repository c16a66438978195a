"""The scripted model: a provider that plays a script, for tests and the offline demo.

It answers the Mind's own prompts (the summariser's, the decision layer's stages, the
runtime notes), so it reads `mind.core` and `mind.actions`; it lives above them, and above
`mind.providers`, whose real adapters must not depend on the layers that use them.
`configured.build_provider` is where a configured kind becomes a provider, scripted or not.
"""
