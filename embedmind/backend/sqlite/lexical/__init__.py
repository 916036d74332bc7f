"""The SQLite backend's BM25 index: postings in the store file, MaxScore, session context."""
