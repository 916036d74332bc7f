"""EmbedmindStore's index and TTL configs: what the constructor refuses, expiry, refresh, sweeper."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_embedmind import EmbedmindStore
from langchain_embedmind.store_namespaces import item_id
from langgraph.store.memory import InMemoryStore

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

SHORT = 0.002  # minutes: 120 ms


@pytest.fixture
def engine() -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as store:
        yield store


def _expiry(store: EmbedmindStore, namespace: tuple[str, ...], key: str) -> Any:
    memory = store.store.get(item_id(store._namespace(namespace), key))
    assert memory is not None
    return memory.expires_at


def test_the_default_index_is_the_stores_embedder_over_the_whole_value(
    engine: embedmind.Store,
) -> None:
    store = EmbedmindStore(engine)
    assert store.index_config is not None and store.index_config["dims"] == 64
    assert store.index_config["fields"] == ["$"]
    store.put(("d",), "k", {"a": "green tea"}, index=False)
    store.put(("d",), "j", {"a": "green tea"})
    assert [(r.key, r.score is None) for r in store.search(("d",), query="green tea")] == [
        ("j", False),
        ("k", True),
    ]


def test_a_text_only_store_ranks_by_bm25_without_scores() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as engine:
        store = EmbedmindStore(engine)
        assert store.index_config is None
        store.put(("d",), "1", {"text": "bicycle repair"})
        store.put(("d",), "2", {"text": "green tea"})
        store.put(("d",), "3", {"text": "green tea"}, index=False)
        found = store.search(("d",), query="green tea")
        assert [r.key for r in found] == ["2", "1", "3"]
        assert all(r.score is None for r in found)


def test_an_index_on_a_store_without_embedder_says_what_to_write() -> None:
    with (
        embedmind.Store.open(":memory:", embedder=None) as engine,
        pytest.raises(embedmind.InvalidInputError, match=r"Store.open\(path, embedder="),
    ):
        EmbedmindStore(engine, index={"dims": 64, "embed": HashingEmbedder(64)})


def test_other_dims_or_another_model_are_refused(engine: embedmind.Store) -> None:
    with pytest.raises(embedmind.InvalidInputError, match="write dims=64"):
        EmbedmindStore(engine, index={"dims": 1536, "fields": ["text"]})

    def reversed_model(texts: list[str]) -> list[list[float]]:
        return [list(reversed(v.tolist())) for v in HashingEmbedder(64).embed_documents(texts)]

    with pytest.raises(embedmind.InvalidInputError, match="is not the store's embedder"):
        EmbedmindStore(engine, index={"dims": 64, "embed": reversed_model})


def test_the_same_model_as_a_callable_is_accepted(engine: embedmind.Store) -> None:
    model = HashingEmbedder(64)
    store = EmbedmindStore(
        engine,
        index={
            "dims": 64,
            "embed": lambda texts: model.embed_documents(texts).tolist(),
            "fields": ["text"],
        },
    )
    store.put(("d",), "k", {"text": "green tea"})
    score = store.search(("d",), query="green tea")[0].score
    assert score is not None and -1.0 <= score <= 1.0 and score == pytest.approx(1.0, abs=1e-6)


def test_a_provider_string_goes_through_langgraph(engine: embedmind.Store) -> None:
    # Offline, the provider's package is missing: the error is LangGraph's own, whatever
    # it is in the installed versions (ValueError without `langchain`, ImportError with it).
    index: Any = {"dims": 64, "embed": "openai:text-embedding-3-small"}
    with pytest.raises(Exception) as theirs:
        InMemoryStore(index=index)
    with pytest.raises(type(theirs.value)) as ours:
        EmbedmindStore(engine, index=index)
    assert str(ours.value) == str(theirs.value)


def test_open_shares_one_model_between_engine_and_index(tmp_path: Path) -> None:
    index: Any = {"dims": 64, "embed": HashingEmbedder(64), "fields": ["text"]}
    with EmbedmindStore.open(tmp_path / "memory.mind", index=index) as store:
        store.put(("u",), "k", {"text": "kept across opens"})
    with EmbedmindStore.open(tmp_path / "memory.mind", index=index) as store:
        found = store.search(("u",), query="kept across opens")
        assert found[0].key == "k" and found[0].score == pytest.approx(1.0, abs=1e-6)


def test_bad_ttl_configs_are_refused(engine: embedmind.Store) -> None:
    with pytest.raises(ValueError, match="unknown TTL config keys"):
        EmbedmindStore(engine, ttl={"default_tll": 5})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(ValueError, match="positive"):
        EmbedmindStore(engine, ttl={"default_ttl": 0})


def test_default_ttl_expires_items(engine: embedmind.Store) -> None:
    store = EmbedmindStore(engine, ttl={"default_ttl": SHORT})
    assert store.ttl_config == {"default_ttl": SHORT}
    store.put(("t",), "short", {"text": "soon gone"})
    store.put(("t",), "kept", {"text": "stays"}, ttl=None)
    time.sleep(SHORT * 60 * 2)
    assert store.get(("t",), "short") is None
    assert [r.key for r in store.search(("t",), query="soon gone")] == ["kept"]
    assert [r.key for r in store.search(("t",))] == ["kept"]


def test_reads_refresh_the_ttl_unless_told_not_to(engine: embedmind.Store) -> None:
    store = EmbedmindStore(engine, ttl={"default_ttl": 10, "refresh_on_read": True})
    store.put(("t",), "k", {"text": "green tea"})
    first = _expiry(store, ("t",), "k")
    time.sleep(0.01)
    store.get(("t",), "k", refresh_ttl=False)
    assert _expiry(store, ("t",), "k") == first
    store.get(("t",), "k")  # refresh_on_read: the default refreshes
    second = _expiry(store, ("t",), "k")
    assert second > first
    time.sleep(0.01)
    store.search(("t",), query="green tea")
    assert _expiry(store, ("t",), "k") > second


def test_refresh_on_read_false_keeps_the_expiry(engine: embedmind.Store) -> None:
    store = EmbedmindStore(engine, ttl={"default_ttl": 10, "refresh_on_read": False})
    store.put(("t",), "k", {"text": "green tea"})
    first = _expiry(store, ("t",), "k")
    time.sleep(0.01)
    store.get(("t",), "k")
    store.search(("t",), query="green tea")
    assert _expiry(store, ("t",), "k") == first


def test_the_sweeper_deletes_expired_items(engine: embedmind.Store) -> None:
    store = EmbedmindStore(engine, ttl={"default_ttl": SHORT, "sweep_interval_minutes": SHORT})
    store.put(("t",), "k", {"text": "gone"})
    store.put(("t",), "durable", {"text": "kept"}, ttl=None)
    future = store.start_ttl_sweeper()
    assert store.start_ttl_sweeper() is future  # one sweeper at a time
    deadline = time.monotonic() + 10
    while engine.stats().live > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert engine.stats().live == 1  # deleted, not only hidden
    assert store.stop_ttl_sweeper(timeout=5)
    assert future.done()


def test_sweep_ttl_now(engine: embedmind.Store) -> None:
    store = EmbedmindStore(engine)
    store.put(("t",), "k", {"text": "gone"}, ttl=SHORT)
    time.sleep(SHORT * 60 * 2)
    assert store.sweep_ttl() == 1
    assert store.sweep_ttl() == 0
