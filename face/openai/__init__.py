"""The OpenAI-compatible chat endpoint of the Face (`/v1/models`, `/v1/chat/completions`)."""
