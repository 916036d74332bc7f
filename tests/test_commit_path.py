"""One commit path: every public mutating method of Store evicts, saves, counts, notifies, derives.

Each row of ``CASES`` runs one mutation on a store set up so that every
post-commit step has something to do — a capped namespace at its cap, vector
and fragment changes left unsaved, a fragment policy — and checks each step
that applies to it (the rule is in :mod:`embedmind.commit`): eviction past the
cap, the index saves when due, the metrics calls, the ``records_committed``
events, fragment embedding. ``test_every_public_method_is_classified`` keeps
the rows in step with the Store class: a new public method fails it until it
is classified as a reader or given a row here.
"""

from __future__ import annotations

import datetime as dt
import importlib
import inspect
import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import embedmind
from embedmind import aliases as alias_table
from embedmind import plugins
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine import commit as commit_path
from embedmind.events import (
    MemoryDeleted,
    MemoryForgotten,
    MemoryRedacted,
    MemoryUpdated,
    MemoryWritten,
)
from embedmind.hookspecs import hookimpl
from embedmind.policies import EvictionPolicy, FragmentPolicy

UTC = dt.timezone.utc
T0 = dt.datetime(2025, 1, 1, tzinfo=UTC)
DIMS = 32
# Working memories of "capped" are kept to two: the fill (old1, old2) is at the
# cap, so any memory entering that group evicts old1, the oldest.
CAP = EvictionPolicy(max_records=2, namespaces="capped", tiers=["working"])
FRAGMENTS = FragmentPolicy(chunker="words", window=4)

READERS = {
    "aliases", "entities_of", "entity_members", "export_jsonl", "find_by_fingerprint", "get", "get_many",
    "iter", "lineage", "links", "namespaces", "neighbors", "recall", "related", "stats",
    "vectors",
}  # fmt: skip
"""Public methods that change nothing."""
NOT_MUTATIONS = {"open", "close", "embedder", "path", "schema_version"}
"""Opening, closing and properties."""


class Metrics:
    """A metrics observer that records every call, whatever its name."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args: self.calls.append((name, *args))


class Listener:
    def __init__(self) -> None:
        self.events: list[object] = []

    @hookimpl
    def records_committed(self, store: Any, events: Sequence[Any]) -> None:
        self.events += events


@dataclass
class World:
    store: embedmind.Store
    metrics: Metrics
    listener: Listener
    export: Path
    ids: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """One mutation and what the commit path must do after it.

    Attributes:
        method: The Store method it exercises.
        act: Runs it; returns the id of a memory it wrote, if any.
        events: The expected events; ``"NEW"`` stands for the returned id.
        metrics: The expected metrics calls (``active_by_tier`` gauges aside).
        fragments: Whether the written (or redacted) memory gets fragments.
    """

    method: str
    act: Callable[[World], str | None]
    events: tuple[object, ...] = ()
    metrics: tuple[tuple[Any, ...], ...] = ()
    fragments: bool = False

    @property
    def evicts(self) -> bool:
        return MemoryDeleted("old1") in self.events


EVICT = MemoryDeleted("old1")


def _remember(w: World) -> str:
    return w.store.remember("fresh working note", namespace="capped", tier="working").id


def _remember_many(w: World) -> str:
    drafts = [embedmind.Draft("fresh working note", namespace="capped", tier="working")]
    return w.store.remember_many(drafts)[0].id


def _remember_detailed(w: World) -> str:  # what the MCP server's remember tool calls
    return w.store.remember_detailed(
        "fresh working note", namespace="capped", tier="working"
    ).memory.id


def _supersede(w: World) -> str:
    return w.store.remember(
        "revised working note", namespace="capped", tier="working", supersedes=["sc"]
    ).id


def _import(w: World) -> str:  # what `embedmind import` calls
    assert w.store.import_jsonl(w.export) == 1
    return "imp"


def _redact(w: World) -> str:
    return w.store.redact("doc", "[redacted] placeholder text").id


def _reindex_aliases(w: World) -> None:
    # A change whose re-index did not run (a crash after its commit) leaves memories pending;
    # that change's own commit must not count as the re-index's saves.
    store = w.store
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(commit_path, "SAVE_INDEX_AFTER", 10**9)
        entries = alias_table.validate({"doc": "document"})
        alias_table.set_aliases(store._engine.commit, entries, replace=False)
    assert all(_unsaved(store))
    assert store.reindex_aliases() > 0


CASES = [
    Case(
        "remember", _remember, (MemoryWritten("NEW", "capped", "working"), EVICT),
        (("upsert", "write", "working"), ("delete",)), fragments=True,
    ),
    Case(
        "remember_many", _remember_many, (MemoryWritten("NEW", "capped", "working"), EVICT),
        (("upsert", "write", "working"), ("delete",)), fragments=True,
    ),
    Case(
        "remember_detailed", _remember_detailed,
        (MemoryWritten("NEW", "capped", "working"), EVICT),
        (("upsert", "write", "working"), ("delete",)), fragments=True,
    ),
    Case(
        "remember", _supersede,
        (MemoryWritten("NEW", "capped", "working"), MemoryUpdated("sc", "capped", "semantic"),
         EVICT),
        (("upsert", "write", "working"), ("update", "supersede", "semantic"), ("delete",)),
        fragments=True,
    ),
    Case(
        "import_jsonl", _import, (MemoryWritten("NEW", "capped", "working"), EVICT),
        (("upsert", "import", "working"), ("delete",)), fragments=True,
    ),
    Case(
        "redact", _redact, (MemoryRedacted("doc"),), (("upsert", "redact", "semantic"),),
        fragments=True,
    ),
    Case("forget", lambda w: w.store.forget("doc") and None, (MemoryForgotten("doc"),),
         (("soft_delete",),)),
    Case("delete", lambda w: w.store.delete("doc") and None, (MemoryDeleted("doc"),),
         (("delete",),)),
    Case(
        "sweep_expired", lambda w: w.store.sweep_expired(now=T0 + dt.timedelta(hours=2)) and None,
        (MemoryDeleted("short"),), (("sweep_expired", "working"),),
    ),
    Case(
        "delete_namespace", lambda w: w.store.delete_namespace("gone") and None,
        (MemoryDeleted("g1"), MemoryDeleted("g2")), (("delete",), ("delete",)),
    ),
    Case(
        "move", lambda w: w.store.move(["mv"], "free", "capped") and None,
        (MemoryUpdated("mv", "capped", "working"), EVICT),
        (("update", "move", "working"), ("delete",)),
    ),
    Case(
        "rename_namespace", lambda w: w.store.rename_namespace("src", "capped") and None,
        (MemoryUpdated("rn", "capped", "working"), EVICT),
        (("update", "rename_namespace", "working"), ("delete",)),
    ),
    Case(
        "retier", lambda w: w.store.retier("sc", "working") and None,
        (MemoryUpdated("sc", "capped", "working"), EVICT),
        (("update", "retier", "working"), ("delete",)),
    ),
    Case(
        "reinforce", lambda w: w.store.reinforce(["doc", "missing"]) and None,
        (MemoryUpdated("doc", "free", "semantic"),), (("update", "reinforce", "semantic"),),
    ),
    Case(
        "restore", lambda w: w.store.restore("ctr") and None,
        (MemoryUpdated("ctr", "free", "semantic"),), (("update", "restore", "semantic"),),
    ),
    Case(
        "mark_contradicted", lambda w: w.store.mark_contradicted("doc", by="other") and None,
        (MemoryUpdated("doc", "free", "semantic"),),
        (("update", "mark_contradicted", "semantic"),),
    ),
    Case(
        "set_confidence", lambda w: w.store.set_confidence("doc", 0.5) and None,
        (MemoryUpdated("doc", "free", "semantic"),), (("update", "set_confidence", "semantic"),),
    ),
    # Links and vacuum's removal of tombstones (reported when forgotten) change no memory.
    Case("link_namespaces", lambda w: w.store.link_namespaces("free", "capped") and None),
    Case("unlink", lambda w: w.store.unlink("free", "shared") and None),
    Case("vacuum", lambda w: w.store.vacuum() and None),
    # The alias table is configuration: its changes and re-index rewrite postings, no memory row.
    Case("set_aliases", lambda w: w.store.set_aliases({"nyc": "new york"}) and None),
    Case("remove_aliases", lambda w: w.store.remove_aliases(["nyc"]) and None),
    Case("reindex_aliases", _reindex_aliases),
]  # fmt: skip
MUTATORS = {case.method for case in CASES}


def _id(case: Case) -> str:
    name = case.act.__name__
    return case.method if name == "<lambda>" else name.strip("_")


def test_every_public_method_is_classified() -> None:
    public = {name for name in dir(embedmind.Store) if not name.startswith("_")}
    assert public == MUTATORS | READERS | NOT_MUTATIONS
    assert not MUTATORS & READERS


def test_the_mcp_and_cli_writes_are_the_rows_above() -> None:
    # The MCP remember tool, `embedmind import` and `embedmind remember` call these methods.
    mcp_server = inspect.getsource(importlib.import_module("embedmind.cli.mcp_server"))
    commands = inspect.getsource(importlib.import_module("embedmind.cli.memories"))
    upkeep = inspect.getsource(importlib.import_module("embedmind.cli.upkeep"))
    assert "store.remember_detailed(" in mcp_server
    assert "store.import_jsonl(" in upkeep and "store.remember(" in commands


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    listener, metrics = Listener(), Metrics()
    plugins.register(listener)
    # Nothing is saved while the world is built, so every row starts with unsaved changes.
    monkeypatch.setattr(commit_path, "SAVE_INDEX_AFTER", 10**9)
    export = tmp_path / "export.jsonl"
    with embedmind.Store.open(tmp_path / "src.mind", embedder=HashingEmbedder(DIMS)) as source:
        source.remember("imported working note", id="imp", namespace="capped", tier="working")
        source.export_jsonl(export)
    store = embedmind.Store.open(
        tmp_path / "s.mind", embedder=HashingEmbedder(DIMS), metrics=metrics,
        fragment_policy=FRAGMENTS, eviction=CAP,
    )  # fmt: skip
    try:
        _fill(store)
        listener.events.clear()
        metrics.calls.clear()
        yield World(store, metrics, listener, export)
    finally:
        store.close()
        plugins.unregister(listener)


def _fill(store: embedmind.Store) -> None:
    minute = dt.timedelta(minutes=1)
    for i, name in enumerate(("old1", "old2")):
        store.remember(f"{name} working fill", id=name, namespace="capped", tier="working",
                       created_at=T0 + i * minute)  # fmt: skip
    store.remember("semantic in the capped one", id="sc", namespace="capped")
    store.remember("a working memory to move", id="mv", namespace="free", tier="working")
    store.remember("a working memory to rename", id="rn", namespace="src", tier="working")
    store.remember("doc content words here", id="doc", namespace="free")
    store.remember("other content words here", id="other", namespace="free")
    store.remember("contradicted content words", id="ctr", namespace="free")
    store.mark_contradicted("ctr", by="other")
    store.remember("short lived", id="short", namespace="free", tier="working", created_at=T0,
                   expires_at=T0 + dt.timedelta(hours=1), now=T0)  # fmt: skip
    store.remember_many([embedmind.Draft("gone one", id="g1", namespace="gone"),
                         embedmind.Draft("gone two", id="g2", namespace="gone")])  # fmt: skip
    store.remember("tombstone to be", id="tomb", namespace="free")
    store.forget("tomb")
    store.link_namespaces("free", "shared")
    # Put explicitly, so the fragment log has unsaved entries even without embed-on-write.
    store.fragments.put("other", [((0, 5), "other")])


def _unsaved(store: embedmind.Store) -> tuple[int, int]:
    """Changes the vector and fragment index files do not reflect yet (internals: no API)."""
    assert store._vectors is not None and store.fragments.index is not None
    with store._db.read() as conn:
        return store._vectors.unsaved(conn), store.fragments.index.unsaved(conn)


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_each_mutation_runs_the_commit_path(
    case: Case, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = world.store
    assert all(_unsaved(store))  # so the saves below are the mutation's own
    monkeypatch.setattr(commit_path, "SAVE_INDEX_AFTER", 1)  # every commit is due
    new = case.act(world)

    expected = [_named(e, new) for e in case.events]
    assert world.listener.events == expected, "records_committed events"
    calls = [c for c in world.metrics.calls if c[0] != "active_by_tier"]  # a gauge, not a count
    assert calls == list(case.metrics), "metrics"
    if case.evicts:
        assert store.get("old1") is None and store.get("old2") is not None, "eviction"
    assert _unsaved(store) == (0, 0), "index saves when due"
    if case.fragments:
        assert new is not None
        hits = store.fragments.query("content note text placeholder", k=200)
        assert new in {h.record_id for h in hits}, "fragment embedding"


def _named(event: object, new: str | None) -> object:
    if getattr(event, "id", None) == "NEW":
        assert new is not None
        return type(event)(new, *list(vars(event).values())[1:])
    return event


def test_tombstones_a_rename_carries_along_are_not_reported_again(world: World) -> None:
    assert world.store.rename_namespace("free", "elsewhere") == 6  # five live, one tombstone
    reported = {e.id for e in world.listener.events if isinstance(e, MemoryUpdated)}
    assert reported == {"mv", "doc", "other", "ctr", "short"}  # "tomb" was reported forgotten
    assert [c[0] for c in world.metrics.calls] == ["update"] * 5


READS: dict[str, Callable[[embedmind.Store], object]] = {
    "aliases": lambda s: s.aliases(),
    "entities_of": lambda s: s.entities_of("doc"),
    "entity_members": lambda s: s.entity_members("x"),
    "export_jsonl": lambda s: s.export_jsonl(io.StringIO()),
    "find_by_fingerprint": lambda s: s.find_by_fingerprint("free", "semantic", "doc content"),
    "get": lambda s: s.get("doc"),
    "get_many": lambda s: s.get_many(["doc"]),
    "iter": lambda s: list(s.iter()),
    "lineage": lambda s: s.lineage("doc"),
    "links": lambda s: s.links(),
    "namespaces": lambda s: s.namespaces(),
    "neighbors": lambda s: s.neighbors("doc"),
    "recall": lambda s: s.recall("doc content"),
    "related": lambda s: s.related("doc"),
    "stats": lambda s: s.stats(),
    "vectors": lambda s: s.vectors(["doc"]),
}


def test_the_readers_commit_nothing(world: World) -> None:
    assert set(READS) == READERS
    for name, read in READS.items():
        read(world.store)
        assert world.listener.events == [] and world.metrics.calls == [], name
