"""Bad input gets a typed error naming the field, writes nothing, and costs little (RELIABILITY S5).

The table covers every kind of bad value the engine accepts from a caller:
non-str and oversized content (1 MiB + 1 and 50 MB), lone surrogates in every
text field, NaN, infinite, wrong-length, wrong-shape and wrong-dtype vectors
(each through every call that takes a vector), metadata that is not JSON
(NaN, sets, bytes, non-str keys, cycles, deep nesting, mappings JSON cannot
write), instants outside the representable range, and huge inputs: batches of
20,000 drafts (200,000 in the soak) with one bad item last, 10M-float
vectors, million-item lists. Each case must raise an
:class:`~embedmind.EmbedmindError` (never a raw ``TypeError``,
``OverflowError``, ``UnicodeEncodeError`` or numpy warning), leave a full dump
of the store (schema and every row of every table) unchanged, and finish
within a generous time bound; the huge inputs are also measured with
:mod:`tracemalloc` and may not allocate more than ten times their own size.
Controls next to the bad vectors prove the validation is not simply
rejecting everything: awkward but valid vectors are stored as unit vectors.
"""

from __future__ import annotations

import datetime as dt
import math
import time
import tracemalloc
import types
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

import embedmind
from embedmind import Draft
from embedmind.embedders.hashing import HashingEmbedder

if TYPE_CHECKING:
    from conftest import Figures

UTC = dt.timezone.utc
HUGE = "x" * ((1 << 20) + 1)
DIMS = 8
SECOND = 2.0
"""Generous bound for one rejected call (they take microseconds to milliseconds)."""
LATE = dt.timezone(dt.timedelta(hours=-12))
EARLY = dt.timezone(dt.timedelta(hours=12))


class Weird:
    pass


def _cycle() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


def _list_cycle() -> dict[str, Any]:
    items: list[Any] = []
    items.append(items)
    return {"l": items}


def dump(store: embedmind.Store) -> list[Any]:
    """The schema and every row of every table: "nothing written" compares two of these.

    Read through the store's own connection, since an in-memory store has no
    file a second connection could open.
    """
    with store._db.read() as conn:
        schema = list(conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name"))
        tables = [r[1] for r in schema if r[0] == "table"]
        return [schema] + [
            (table, sorted(conn.execute(f'SELECT * FROM "{table}"'), key=repr)) for table in tables
        ]


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
    ("confidence", {"confidence": -0.25}),
    ("confidence", {"confidence": float("nan")}),
    ("confidence", {"confidence": True}),
    ("now", {"now": dt.datetime(2026, 1, 1)}),
    # Content of every wrong type and size.
    ("content", {"content": None}),
    ("content", {"content": bytearray(b"x")}),
    ("content", {"content": ["a", "list"]}),
    ("content", {"content": 1.5}),
    ("content", {"content": Weird()}),
    ("content", {"content": "é" * ((1 << 19) + 1)}),  # under 1 MiB of characters, over as UTF-8
    ("content", {"content": "\udfff"}),
    ("content", {"content": "ok \udcff escaped byte"}),
    # Lone surrogates in every other text field.
    ("id", {"id": "\ud800"}),
    ("namespace", {"namespace": "a/\ud800"}),
    ("tags", {"tags": ["\ud800"]}),
    ("agent", {"agent": "\ud800"}),
    ("session_id", {"session_id": "\ud800"}),
    ("entities", {"entities": ["\ud800"]}),
    ("relations", {"relations": [("\ud800", "x")]}),
    ("relations", {"relations": [("kind", "\ud800")]}),
    ("supersedes", {"supersedes": ["\ud800"]}),
    ("metadata", {"metadata": {"\ud800": 1}}),
    ("metadata", {"metadata": {"l": ["ok", "\udcff"]}}),
    # Metadata that is not JSON.
    ("metadata", {"metadata": {"x": float("-inf")}}),
    ("metadata", {"metadata": {"x": [1, float("nan")]}}),
    ("metadata", {"metadata": {"x": {"y": float("inf")}}}),
    ("metadata", {"metadata": {"x": frozenset()}}),
    ("metadata", {"metadata": {"x": bytearray(b"x")}}),
    ("metadata", {"metadata": {"x": 1j}}),
    ("metadata", {"metadata": {"x": Decimal("1.5")}}),
    ("metadata", {"metadata": {"x": dt.datetime(2026, 1, 1, tzinfo=UTC)}}),
    ("metadata", {"metadata": {"x": np.int64(1)}}),
    ("metadata", {"metadata": {"x": -(2**63) - 1}}),
    ("metadata", {"metadata": {None: 1}}),
    ("metadata", {"metadata": {(1, 2): 1}}),
    ("metadata", {"metadata": _cycle()}),
    ("metadata", {"metadata": _list_cycle()}),
    ("metadata", {"metadata": types.MappingProxyType({"a": 1})}),
    ("metadata", {"metadata": {"x": types.MappingProxyType({"a": 1})}}),
    ("metadata", {"metadata": {"big": "x" * (1 << 20)}}),
    ("metadata", {"metadata": "{\"json\": \"text\"}"}),
    # Instants outside what a datetime can hold once converted to UTC.
    ("ttl", {"ttl": dt.timedelta.max}),
    ("ttl", {"ttl": dt.timedelta(days=3_000_000)}),
    ("expires_at", {"expires_at": dt.datetime.max.replace(tzinfo=LATE)}),
    ("created_at", {"created_at": dt.datetime.min.replace(tzinfo=EARLY)}),
    ("created_at", {"created_at": dt.datetime.max.replace(tzinfo=LATE)}),
    ("valid_to", {"valid_to": dt.datetime.max.replace(tzinfo=LATE)}),
    ("now", {"now": dt.datetime.max.replace(tzinfo=LATE)}),
]  # fmt: skip


def _metadata_nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"d": value}
    return value


@pytest.mark.parametrize(("field", "kwargs"), BAD_REMEMBER)
def test_remember_rejects_bad_input(
    store: embedmind.Store, field: str, kwargs: dict[str, Any], figures: Figures
) -> None:
    store.remember("an existing memory", id="x")
    before = dump(store)
    args = {"content": "valid content", **kwargs}
    content = args.pop("content")
    now = {"now": args.pop("now")} if "now" in args else {}
    for call in (
        lambda: store.remember(content, **args, **now),
        lambda: store.remember_detailed(content, **args, **now),
        lambda: store.remember_many([Draft("fine", id="fine"), Draft(content, **args)], **now),
    ):
        started = time.perf_counter()
        with pytest.raises(embedmind.InvalidInputError) as info:
            call()
        assert time.perf_counter() - started < SECOND
        assert info.value.field.split("[")[0] in (field, "drafts"), info.value.field
        assert dump(store) == before
    figures(cases=3, leaks=0)


def test_deep_metadata_is_rejected(store: embedmind.Store, figures: Figures) -> None:
    with pytest.raises(embedmind.InvalidInputError):
        store.remember("x", metadata=_metadata_nested(40))
    store.remember("x", metadata=_metadata_nested(20))
    assert store.stats().live == 1
    figures(cases=2, leaks=0)


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
def test_reads_and_writes_reject_bad_arguments(
    store: embedmind.Store, call: Any, figures: Figures
) -> None:
    store.remember("seed memory", id="seed", metadata={"a": 1})
    before = dump(store)
    with pytest.raises(embedmind.InvalidInputError):
        call(store)
    assert dump(store) == before
    figures(cases=1, leaks=0)


def test_store_open_rejects_bad_paths(tmp_path: Any, figures: Figures) -> None:
    # The full path table (S1) is tests/security/test_paths.py.
    for path in ["", "a\x00b", str(tmp_path), str(tmp_path / "missing-dir" / "x.mind"), 42]:
        with pytest.raises(embedmind.InvalidInputError):
            embedmind.Store.open(path, embedder=None)  # type: ignore[arg-type]
    for kwargs in ({"synchronous": "OFF"}, {"busy_timeout": 0}, {"busy_timeout": "1"}):
        with pytest.raises(embedmind.InvalidInputError):
            embedmind.Store.open(tmp_path / "ok.mind", embedder=None, **kwargs)
    figures(cases=8, leaks=0)


# -- vectors ---------------------------------------------------------------------------------

BAD_VECTORS: list[tuple[str, object]] = [
    ("NaN", [float("nan")] + [1.0] * (DIMS - 1)),
    ("inf", [float("inf")] + [1.0] * (DIMS - 1)),
    ("-inf", [1.0] * (DIMS - 1) + [float("-inf")]),
    ("too short", [1.0] * (DIMS - 1)),
    ("too long", [1.0] * (DIMS + 1)),
    ("empty", []),
    ("scalar", 1.0),
    ("zero", [0.0] * DIMS),
    ("numbers as strings", ["0.5"] * DIMS),
    ("bytes", b"\x00\x00\x80\x3f" * DIMS),
    ("booleans", [True] * DIMS),
    ("numpy booleans", np.ones(DIMS, dtype=bool)),
    ("complex", [1j] * DIMS),
    ("numpy complex", np.ones(DIMS, dtype=np.complex128)),
    ("decimals", np.array([Decimal(1)] * DIMS, dtype=object)),
    ("None", [None] * DIMS),
    ("datetimes", [dt.datetime(2026, 1, 1)] * DIMS),
    ("int beyond float", [10**400] + [1] * (DIMS - 1)),
    ("two vectors for one", [[1.0] * DIMS, [2.0] * DIMS]),
    ("3-d", [[[1.0] * DIMS]]),
    ("ragged", [[1.0] * DIMS, [1.0] * (DIMS - 1)]),
    ("dict", {"a": 1.0}),
    ("set", set(range(DIMS))),
]
STRING_VECTORS = [("text", "12345678")]
"""Strings: bad where a vector is required, but text to embed for the fragment calls."""
GOOD_VECTORS: list[tuple[str, object, list[float]]] = [
    ("float32", np.ones(DIMS, dtype=np.float32), [1.0] * DIMS),
    ("float16", np.ones(DIMS, dtype=np.float16), [1.0] * DIMS),
    ("ints", list(range(1, DIMS + 1)), [float(i) for i in range(1, DIMS + 1)]),
    ("one row", [[2.0] * DIMS], [1.0] * DIMS),
    # Finite, with a direction, but their squares overflow or underflow a float64.
    ("huge", [1e308] * DIMS, [1.0] * DIMS),
    ("huge mixed", [1e308, -1e308] + [0.0] * (DIMS - 2), [1.0, -1.0] + [0.0] * (DIMS - 2)),
    ("tiny", [1e-300] * DIMS, [1.0] * DIMS),
]


def _unit(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


@pytest.fixture
def vstore() -> Any:
    """A store with the tiny deterministic embedder and one memory with fragments."""
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS)) as s:
        s.remember("apple orchard", id="seed")
        s.fragments.put("seed", [((0, 5), "apple")])
        yield s


def _vector_calls(vector: object, is_text: bool) -> dict[str, Callable[[Any], object]]:
    calls: dict[str, Callable[[Any], object]] = {
        "remember": lambda s: s.remember("pear", id="new", vector=vector),
        "remember_detailed": lambda s: s.remember_detailed("pear", id="new", vector=vector),
        "remember_many": lambda s: s.remember_many(
            [Draft("fine", id="fine"), Draft("pear", id="new", vector=vector)]
        ),
        "recall": lambda s: s.recall("apple", vector=vector),
        "recall vector": lambda s: s.recall("apple", mode="vector", vector=vector),
    }
    if not is_text:
        calls["fragments.put"] = lambda s: s.fragments.put("seed", [((0, 5), vector)])
        calls["fragments.query"] = lambda s: s.fragments.query(vector)
    return calls


@pytest.mark.parametrize(
    ("label", "vector"),
    BAD_VECTORS + STRING_VECTORS,
    ids=[c[0] for c in BAD_VECTORS + STRING_VECTORS],
)
def test_bad_vectors_are_rejected_everywhere(
    vstore: embedmind.Store, label: str, vector: object, figures: Figures
) -> None:
    before = dump(vstore)
    calls = _vector_calls(vector, is_text=isinstance(vector, str))
    for name, call in calls.items():
        started = time.perf_counter()
        with pytest.raises(embedmind.InvalidInputError) as info:
            call(vstore)
        assert time.perf_counter() - started < SECOND, name
        assert "vector" in info.value.field or "query" in info.value.field, (name, info.value)
        assert dump(vstore) == before, name
    figures(cases=len(calls), leaks=0)


@pytest.mark.parametrize(
    ("label", "vector", "direction"), GOOD_VECTORS, ids=[c[0] for c in GOOD_VECTORS]
)
def test_awkward_but_valid_vectors_are_stored_as_unit_vectors(
    vstore: embedmind.Store, label: str, vector: object, direction: list[float], figures: Figures
) -> None:
    vstore.remember("pear", id="new", vector=vector)
    stored = vstore.vectors(["new"])["new"]
    assert np.allclose(stored, _unit(direction), atol=1e-6), stored
    assert vstore.recall("pear", vector=vector, mode="vector", k=1).ids == ["new"]
    assert vstore.fragments.put("seed", [((0, 5), vector)]) == 1
    figures(cases=3, leaks=0)


# -- huge inputs: time and memory ---------------------------------------------------------------


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"d": value}
    return value


def _drafts(count: int, bad: Draft) -> list[Draft]:
    return [Draft(f"memory number {i}", id=f"m{i}", metadata={"i": i}) for i in range(count)] + [
        bad
    ]


Huge = tuple[str, Callable[[], Any], Callable[[Any, Any], object], float]
PER_ITEM = 2e-3
"""Seconds per item for the scaled cases: linear and generous (about 0.3 ms per draft is
measured under tracemalloc, which slows allocation-heavy code severalfold)."""


def _huge(batch: int, items: int) -> list[Huge]:
    """The huge-input table at a size: CI runs the small one, the soak the full one."""
    return [
        ("50 MB content", lambda: "x" * 50_000_000, lambda s, x: s.remember(x), SECOND),
        ("50 MB of multibyte content", lambda: "é" * 25_000_000, lambda s, x: s.remember(x),
         SECOND),
        ("50 MB content last in a batch", lambda: ["ok"] * 1000 + ["x" * 50_000_000],
         lambda s, x: s.remember_many(x), SECOND),
        ("50 MB redaction", lambda: "x" * 50_000_000, lambda s, x: s.redact("seed", x), SECOND),
        ("50 MB query", lambda: "apple " * 8_000_000, lambda s, x: s.recall(x), SECOND),
        ("50 MB fragment query", lambda: "apple " * 8_000_000,
         lambda s, x: s.fragments.query(x), SECOND),
        (f"{batch:,} drafts, a NaN vector last",
         lambda: _drafts(batch, Draft("bad", vector=[float("nan")] * DIMS)),
         lambda s, x: s.remember_many(x, batch_size=500), PER_ITEM * batch),
        (f"{batch:,} drafts, a surrogate last", lambda: _drafts(batch, Draft("bad \ud800")),
         lambda s, x: s.remember_many(x, batch_size=500), PER_ITEM * batch),
        (f"{batch:,} dicts, an unknown field last",
         lambda: [{"content": f"m{i}"} for i in range(batch)] + [{"content": "x", "bogus": 1}],
         lambda s, x: s.remember_many(x), PER_ITEM * batch),
        ("10M-float vector", lambda: np.ones(10_000_000),
         lambda s, x: s.remember("x", vector=x), SECOND),
        ("10M-float query vector", lambda: np.ones(10_000_000),
         lambda s, x: s.recall("x", vector=x), SECOND),
        (f"{items:,}-item metadata list over 1 MiB", lambda: {"l": [f"{i:0100d}" for i in range(items)]},
         lambda s, x: s.remember("x", metadata=x), PER_ITEM * items),
        ("metadata nested 100,000 deep", lambda: _nested(100_000),
         lambda s, x: s.remember("x", metadata=x), SECOND),
        (f"{items:,} entities, the last empty", lambda: [f"e{i}" for i in range(items)] + [""],
         lambda s, x: s.remember("x", entities=x), PER_ITEM * items),
        (f"{items:,} relations, the last malformed",
         lambda: [("k", "seed")] * items + [("k",)],
         lambda s, x: s.remember("x", relations=x), PER_ITEM * items),
        ("300,000 tags", lambda: [f"t{i}" for i in range(300_000)],
         lambda s, x: s.remember("x", tags=x), SECOND),
        ("200,000 fragments", lambda: [((0, 1), [1.0] * DIMS)] * 200_000,
         lambda s, x: s.fragments.put("seed", x), SECOND),
    ]  # fmt: skip


SCALED = ("drafts", "dicts", "item metadata", "entities", "relations")
# CI sizes are the ones that still take a few seconds under tracemalloc; the soak
# (``-m slow``) runs 200,000 drafts and million-item lists.
HUGE_INPUTS = [pytest.param(*case, id=case[0]) for case in _huge(5_000, 20_000)] + [
    pytest.param(*case, id=case[0], marks=pytest.mark.slow)
    for case in _huge(200_000, 1_000_000)
    if any(word in case[0] for word in SCALED)
]


def _measure(
    store: embedmind.Store, build: Callable[[], Any], call: Callable[[Any, Any], object]
) -> tuple[int, int, float, BaseException | None]:
    """Run ``call`` on freshly built input; return input size, extra peak, seconds, error."""
    tracemalloc.start()
    try:
        value = build()
        size = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        started = time.perf_counter()
        error: BaseException | None = None
        try:
            call(store, value)
        except Exception as e:
            error = e
        elapsed = time.perf_counter() - started
        extra = tracemalloc.get_traced_memory()[1] - size
    finally:
        tracemalloc.stop()
    return size, extra, elapsed, error


@pytest.mark.serial  # the serial pass of `make test`: each rejection is timed against its bound (seconds)
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("label", "build", "call", "bound"), HUGE_INPUTS)
def test_huge_input_is_rejected_in_bounded_time_and_memory(
    vstore: embedmind.Store,
    label: str,
    build: Callable[[], Any],
    call: Callable[[Any, Any], object],
    bound: float,
    figures: Figures,
) -> None:
    before = dump(vstore)
    size, extra, elapsed, error = _measure(vstore, build, call)
    figures(cases=1, leaks=0, seconds=round(elapsed, 3), input_mb=size >> 20, extra_mb=extra >> 20)
    assert isinstance(error, embedmind.InvalidInputError), (label, repr(error))
    assert elapsed < bound, f"{label}: {elapsed:.2f}s"
    assert extra <= 10 * max(size, 1 << 20), (
        f"{label}: {extra >> 20} MB for {size >> 20} MB of input"
    )
    assert dump(vstore) == before


# -- reads, and the other calls that take text -------------------------------------------------

BAD_CALLS: list[tuple[str, Callable[[Any], object]]] = [
    ("where value surrogate", lambda s: list(s.iter(where={"a": "\ud800"}))),
    ("where key surrogate", lambda s: list(s.iter(where={"\ud800": 1}))),
    ("where $in surrogate", lambda s: list(s.iter(where={"a": {"$in": ["x", "\udcff"]}}))),
    ("where $contains surrogate", lambda s: list(s.iter(where={"a": {"$contains": "\ud800"}}))),
    ("where $match surrogate", lambda s: list(s.iter(where={"a": {"$match": "\ud800"}}))),
    ("recall where surrogate", lambda s: s.recall("apple", where={"a": {"$gt": "\ud800"}})),
    ("iter agent surrogate", lambda s: list(s.iter(agent="\ud800"))),
    ("iter session surrogate", lambda s: list(s.iter(session_id="\ud800"))),
    ("iter tags surrogate", lambda s: list(s.iter(tags=["\ud800"]))),
    ("recall agent surrogate", lambda s: s.recall("apple", agent="\ud800")),
    ("recall tags surrogate", lambda s: s.recall("apple", tags=["ok", "\ud800"])),
    ("get surrogate", lambda s: s.get("\ud800")),
    ("entity surrogate", lambda s: s.entity_members("\ud800")),
    ("entity not a str", lambda s: s.entity_members(5)),
    ("namespace int", lambda s: list(s.iter(5))),
    ("namespace dict", lambda s: list(s.iter({"a": 1}))),
    ("namespace bytes", lambda s: list(s.iter(b"a"))),
    ("recall namespace int", lambda s: s.recall("apple", namespace=5)),
    ("recall follow_links namespace int", lambda s: s.recall("a", namespace=5, follow_links=True)),
    ("recall follow_links bad list", lambda s: s.recall("a", namespace=["a", 5], follow_links=True)),
    ("fragments namespace int", lambda s: s.fragments.query("apple", namespace=5)),
    ("neighbors kinds int", lambda s: s.neighbors("seed", kinds=5)),
    ("neighbors kinds str", lambda s: s.neighbors("seed", kinds="supersedes")),
    ("link note surrogate", lambda s: s.link_namespaces("a", "b", note="\ud800")),
    ("fragment text surrogate", lambda s: s.fragments.put("seed", [((0, 5), "\ud800")])),
    ("fragment not a pair", lambda s: s.fragments.put("seed", [((0, 5), "a", "b")])),
    ("fragment not a tuple", lambda s: s.fragments.put("seed", [5])),
    ("redact surrogate", lambda s: s.redact("seed", "\ud800")),
    ("redact not a str", lambda s: s.redact("seed", None)),
    ("reinforce TTL overflow", lambda s: s.reinforce(["ttl"], extend_ttl=dt.timedelta.max)),
    ("retier expiry overflow", lambda s: s.retier("seed", "working",
                                                  expires_at=dt.datetime.max.replace(tzinfo=LATE))),
    ("recall as_of overflow", lambda s: s.recall("apple", as_of=dt.datetime.max.replace(tzinfo=LATE))),
]  # fmt: skip


@pytest.mark.parametrize(("label", "call"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_every_call_rejects_bad_text_and_types_with_a_typed_error(
    vstore: embedmind.Store, label: str, call: Callable[[Any], object], figures: Figures
) -> None:
    vstore.remember("apple with a ttl", id="ttl", ttl=dt.timedelta(days=1))
    before = dump(vstore)
    started = time.perf_counter()
    with pytest.raises(embedmind.InvalidInputError):
        call(vstore)
    assert time.perf_counter() - started < SECOND
    assert dump(vstore) == before
    figures(cases=1, leaks=0)
