"""``tests/test_large_scopes.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_large_scopes.py",
    skip=(
        # It compiles for both backends already, with no store: once is enough.
        "test_a_long_scope_compiles_to_one_statement_whatever_its_length",
        # SQLite's query plans, read on its connection.
        "test_a_short_listing_seeks_the_namespace_index_on_every_page",
        "test_a_long_scope_checks_recall_candidates_by_key",
    ),
)
