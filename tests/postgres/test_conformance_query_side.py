"""``tests/test_query_side.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_query_side.py",
    skip=(
        # Reads SQLite's posting lists and channel; its PostgreSQL form is test_widening.py.
        "test_widened_candidates_carry_the_primary_score",
    ),
)
