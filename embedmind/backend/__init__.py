"""Storage backends: the protocol every backend implements, and the built-in SQLite one."""
