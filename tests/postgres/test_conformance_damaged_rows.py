"""``tests/test_damaged_rows.py`` on both backends (see ``conformance.py``).

On PostgreSQL the damage is an ``UPDATE`` through a connection of the store's
pool; text that is not UTF-8 cannot be stored there (those cases skip).
"""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(globals(), "test_damaged_rows.py")
