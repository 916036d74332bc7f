"""``tests/test_export_import.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_export_import.py",
    skip=(
        # Imports the SQLite store's lock file, which the store on PostgreSQL has not.
        "test_import_refuses_another_model_unless_reembedding",
    ),
)
