"""The SQLite backend: one apsw database file, its BM25 postings and its HNSW caches."""
