"""Storage: the SQLite file, its schema, transactions, locks and all engine file I/O."""
