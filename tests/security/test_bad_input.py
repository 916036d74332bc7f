"""Bad input gets a typed error naming the field, and writes nothing."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import embedmind
from embedmind import Draft

UTC = dt.timezone.utc
HUGE = "x" * ((1 << 20) + 1)


class Weird:
    pass


BAD_REMEMBER: list[tuple[str, dict[str, Any]]] = [
    ("content", {"content": 42}),
    ("content", {"content": b"bytes"}),
    ("content", {"content": HUGE}),
    ("content", {"content": "bad \ud800 surrogate"}),
    ("id", {"id": ""}),
    ("id", {"id": "   "}),
    ("id", {"id": "a\x00b"}),
    ("id", {"id": "x" * 300}),
    ("id", {"id": 7}),
    ("namespace", {"namespace": ""}),
    ("namespace", {"namespace": "a//b"}),
    ("namespace", {"namespace": "a/../b"}),
    ("namespace", {"namespace": "."}),
    ("namespace", {"namespace": "a\x00"}),
    ("namespace", {"namespace": "a/*"}),
    ("namespace", {"namespace": "n" * 300}),
    ("namespace", {"namespace": None}),
    ("metadata", {"metadata": ["not", "a", "dict"]}),
    ("metadata", {"metadata": {"x": float("nan")}}),
    ("metadata", {"metadata": {"x": float("inf")}}),
    ("metadata", {"metadata": {"x": {1, 2}}}),
    ("metadata", {"metadata": {"x": b"bytes"}}),
    ("metadata", {"metadata": {1: "int key"}}),
    ("metadata", {"metadata": {"x": Weird()}}),
    ("metadata", {"metadata": {"x": 2**70}}),
    ("metadata", {"metadata": {"a\x00": 1}}),
    ("metadata", {"metadata": {"x": "\udcff"}}),
    ("tags", {"tags": "single-string"}),
    ("tags", {"tags": [""]}),
    ("tags", {"tags": [3]}),
    ("tier", {"tier": "eternal"}),
    ("level", {"level": "guessed"}),
    ("agent", {"agent": None}),
    ("session_id", {"session_id": 5}),
    ("ttl", {"ttl": dt.timedelta(seconds=-1)}),
    ("ttl", {"ttl": 30}),
    ("ttl", {"ttl": dt.timedelta(seconds=5), "expires_at": dt.datetime(2030, 1, 1, tzinfo=UTC)}),
    ("created_at", {"created_at": dt.datetime(2026, 1, 1)}),
    ("created_at", {"created_at": "2026-01-01"}),
    ("valid_to", {"valid_from": dt.datetime(2026, 1, 2, tzinfo=UTC), "valid_to": dt.datetime(2026, 1, 1, tzinfo=UTC)}),
    ("confidence", {"confidence": 1.5}),
    ("confidence", {"confidence": float("nan")}),
    ("confidence", {"confidence": True}),
    ("now", {"now": dt.datetime(2026, 1, 1)}),
]  # fmt: skip


def _metadata_nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"d": value}
    return value


@pytest.mark.parametrize(("field", "kwargs"), BAD_REMEMBER)
def test_remember_rejects_bad_input(
    store: embedmind.Store, field: str, kwargs: dict[str, Any]
) -> None:
    args = {"content": "valid content", **kwargs}
    content = args.pop("content")
    with pytest.raises(embedmind.InvalidInputError) as info:
        store.remember(content, **args)
    assert info.value.field.split("[")[0] == field
    assert store.stats().live == 0


def test_deep_metadata_is_rejected(store: embedmind.Store) -> None:
    with pytest.raises(embedmind.InvalidInputError):
        store.remember("x", metadata=_metadata_nested(40))
    store.remember("x", metadata=_metadata_nested(20))
    assert store.stats().live == 1


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.recall(42),
        lambda s: s.recall("q", k=0),
        lambda s: s.recall("q", k=10_001),
        lambda s: s.recall("q", k=True),
        lambda s: s.recall("q", mode="psychic"),
        lambda s: s.recall("q", namespace=[]),
        lambda s: s.recall("q", namespace="a//b"),
        lambda s: s.recall("q", where={"$gt": 1}),
        lambda s: s.recall("q", where={"a": {"$regex": "x"}}),
        lambda s: s.recall("q", where={"a": [1, 2]}),
        lambda s: s.recall("q", where={"$or": []}),
        lambda s: s.recall("q", where={"a": {"$gt": None}}),
        lambda s: s.recall("q", where={"a": {"$in": "abc"}}),
        lambda s: s.recall("q", where={"a": {"$exists": 1}}),
        lambda s: s.recall("q", where={"a": float("nan")}),
        lambda s: s.recall("q", where="topic = 1"),
        lambda s: s.recall("q", tags="solo"),
        lambda s: s.recall("q", as_of=dt.datetime(2026, 1, 1)),
        lambda s: s.get(""),
        lambda s: s.get_many("abc"),
        lambda s: s.forget("a\x00"),
        lambda s: s.delete(None),
        lambda s: s.remember_many("not a list"),
        lambda s: s.remember_many([Draft("x")], batch_size=0),
        lambda s: s.remember_many([object()]),
        lambda s: s.remember_many([{"content": "x", "unknown_field": 1}]),
        lambda s: list(s.iter(where={"a": {"$bad": 1}})),
    ],
)
def test_reads_and_writes_reject_bad_arguments(store: embedmind.Store, call: Any) -> None:
    store.remember("seed memory", id="seed", metadata={"a": 1})
    with pytest.raises(embedmind.InvalidInputError):
        call(store)
    assert [m.id for m in store.iter()] == ["seed"]


def test_store_open_rejects_bad_paths(tmp_path: Any) -> None:
    for path in ["", "a\x00b", str(tmp_path), str(tmp_path / "missing-dir" / "x.mind"), 42]:
        with pytest.raises(embedmind.InvalidInputError):
            embedmind.Store.open(path, embedder=None)  # type: ignore[arg-type]
    for kwargs in ({"synchronous": "OFF"}, {"busy_timeout": 0}, {"busy_timeout": "1"}):
        with pytest.raises(embedmind.InvalidInputError):
            embedmind.Store.open(tmp_path / "ok.mind", embedder=None, **kwargs)
