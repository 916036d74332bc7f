"""``tests/test_missing_vectors.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_missing_vectors.py",
    skip=(
        # A hypothesis state machine's unittest TestCase: no fixture (so no
        # backend parameter) reaches it; it runs in tests/test_missing_vectors.py.
        "test_missing_vectors_machine",
    ),
)
