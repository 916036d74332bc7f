"""Import optional peers without ever failing a run because one is missing.

Peers come from the ``peers`` extra of embedmind-bench; a benchmark asks :func:`load` and gets
either the module or a one-line reason to print in a ``skipped`` row.

Example:
    >>> module, reason = load("no_such_peer_module")
    >>> module is None, reason
    (True, 'no_such_peer_module not installed (pip install "embedmind-bench[peers]")')
"""

from __future__ import annotations

import importlib
import os
from contextlib import suppress
from types import ModuleType
from typing import Any

INSTALL_HINT = 'pip install "embedmind-bench[peers]"'
# Environment set before a peer's first import: LanceDB's Rust logger
# otherwise prints a deprecation warning on every query.
_QUIET = {"lancedb": ("LANCEDB_LOG", "error")}


def load(name: str) -> tuple[ModuleType | None, str]:
    """Import module ``name``, or say why it cannot be used here.

    Args:
        name: A module name such as ``"chromadb"``.

    Returns:
        ``(module, "")``, or ``(None, reason)`` when it is missing or its
        import fails (a broken peer is skipped like a missing one).
    """
    variable = _QUIET.get(name.split(".")[0])
    if variable is not None:
        os.environ.setdefault(*variable)
    try:
        return importlib.import_module(name), ""
    except ImportError as exc:
        missing = exc.name or name
        if missing == name or name.startswith(f"{missing}."):
            return None, f"{name} not installed ({INSTALL_HINT})"
        return None, f"{name} import failed: {missing} missing"
    except Exception as exc:  # a peer that crashes on import is skipped, not fatal
        return None, f"{name} import failed: {type(exc).__name__}: {exc}"


def usearch_index() -> Any:
    """Return ``usearch.index.Index``, importing onnxruntime first.

    usearch 2.26.6 imported before onnxruntime 1.32 makes onnxruntime's
    module init crash the interpreter (see ``embedmind.backend.sqlite.hnsw``); the
    other order is fine, so benchmarks that time raw usearch import it here.

    Returns:
        The ``Index`` class.
    """
    with suppress(ImportError):
        importlib.import_module("onnxruntime")
    return importlib.import_module("usearch.index").Index
