"""Events: durable ones through the outbox, ephemeral ones through an in-memory bus."""
