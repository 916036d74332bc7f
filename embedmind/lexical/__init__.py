"""Lexical recall: the analyzer, BM25 postings in SQLite, and Lucene-style BM25 scoring."""
