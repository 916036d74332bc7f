"""``tests/test_fragment_scores.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_fragment_scores.py",
    skip=(
        # Searches SQLite's float16 HNSW graph directly (pgvector keeps float32).
        "test_a_near_tie_the_float16_graph_reverses_is_ranked_exactly",
        # Its oracle reads the SQLite fragment table's rows (until the redirection
        # was module-scoped, this copy ran on SQLite).
        "test_scores_are_the_exact_cosines_of_the_stored_vectors",
    ),
)
