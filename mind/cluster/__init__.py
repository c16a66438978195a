"""Several Minds on one PostgreSQL database: each Mind's place among them (`membership`) and
the conversations it owns (`leases`). On SQLite one Mind owns the data directory and every
conversation in it (`SoleLeases`)."""
