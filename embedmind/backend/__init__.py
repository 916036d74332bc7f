"""Storage backends: what the engine runs on (SQLite by default, PostgreSQL as an extra)."""
