"""``tests/test_date_words.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(globals(), "test_date_words.py")
