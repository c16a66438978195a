"""The Mind's store: models, migrations, engine and the outbox."""
