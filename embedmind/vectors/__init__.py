"""Vector recall: embedding on write, the derived HNSW index, and filtered search."""
