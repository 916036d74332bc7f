"""``tests/test_recall_scores.py`` on both backends (see ``conformance.py``): same scores, same oracle."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(globals(), "test_recall_scores.py")
