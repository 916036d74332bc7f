"""Candidate widening: key-term sub-queries bring candidates, the primary query scores them.

BM25 favours a memory that matches many of the query's words; a turn that
holds only the query's key entity ("Caroline", "pottery") but not its common
words can sit past the fusion depth even though it is the answer. Widening
runs one sub-query per key term — the query's :data:`SUB_QUERIES` rarest
terms, rarest first — and takes each one's first :data:`PER_SUB_QUERY`
admitted memories by that term alone. Those candidates are then scored with
the *primary* query's BM25 (the same postings, session context included), so
widening never invents a score: it only decides which memories are in the
lexical list that fusion sees.

Each backend runs the sub-queries in its own storage (the SQLite backend's
:mod:`embedmind.backend.sqlite.lexical.widening`, the PostgreSQL backend's
:mod:`embedmind.backend.postgres.widening`), reading these constants at each
call.
"""

SUB_QUERIES = 2
"""Key terms that get a sub-query: the query's rarest (highest idf)."""
PER_SUB_QUERY = 10
"""Candidates each sub-query contributes (before removing those already found)."""
