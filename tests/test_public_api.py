"""The public API is pinned: adding or removing a name is a deliberate change."""

from __future__ import annotations

import inspect

import embedmind

PUBLIC = [
    "AgentStats", "ChannelScore", "ConflictError", "DamagedRecordError", "Draft", "EmbedderError",
    "EmbedderMismatchError", "EmbedmindError", "FilterTypeError", "Hit", "InvalidFilterError",
    "InvalidInputError", "Level", "Memory", "Mode", "NotFoundError", "Recall",
    "RedactionIncompleteError", "Remembered",
    "SchemaVersionError", "SimilarMemory", "Stats", "StorageError", "Store", "StoreBusyError",
    "StoreClosedError", "Tier", "__version__", "reembed",
]  # fmt: skip

STORE_METHODS = [
    "aliases", "close", "delete", "delete_namespace", "entities_of", "entity_members", "export_jsonl",
    "find_by_fingerprint", "import_jsonl",
    "forget", "get", "get_many", "iter", "lineage", "link_namespaces", "links",
    "mark_contradicted", "move", "namespaces", "neighbors", "open", "recall", "redact", "reinforce",
    "related", "reindex_aliases", "remember", "remember_detailed", "remember_many",
    "remove_aliases", "rename_namespace", "restore", "retier", "set_aliases", "set_confidence",
    "stats", "sweep_expired", "unlink", "vacuum", "vectors",
]  # fmt: skip


def test_all_is_pinned() -> None:
    assert sorted(embedmind.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert hasattr(embedmind, name)


def test_store_methods_are_pinned() -> None:
    public = sorted(
        name
        for name, _ in inspect.getmembers(embedmind.Store, callable)
        if not name.startswith("_")
    )
    assert public == sorted(STORE_METHODS)


def test_arguments_after_the_first_are_keyword_only() -> None:
    for name in ("remember", "recall", "forget", "iter", "set_aliases", "remove_aliases"):
        params = list(inspect.signature(getattr(embedmind.Store, name)).parameters.values())
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[2:]), name


def test_errors_inherit_the_matching_builtin() -> None:
    assert issubclass(embedmind.NotFoundError, KeyError)
    assert issubclass(embedmind.InvalidInputError, ValueError)
    assert issubclass(embedmind.FilterTypeError, TypeError)
    assert issubclass(embedmind.StoreBusyError, embedmind.StorageError)
    for name in PUBLIC:
        obj = getattr(embedmind, name)
        if inspect.isclass(obj) and issubclass(obj, Exception):
            assert issubclass(obj, embedmind.EmbedmindError)


def test_import_has_no_side_effects() -> None:
    import subprocess
    import sys

    code = (
        "import sys, embedmind; "
        "bad = [m for m in ('onnxruntime', 'usearch', 'langchain_core', 'llama_index') if m in sys.modules]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
