"""A memory damaged in the store is a typed error naming it and the field; the rest stays readable.

Damage is written behind the engine's back, as a flipped byte on disk or an
``UPDATE`` by hand would leave it: on SQLite through a second connection to
the store's file (``CAST(x AS TEXT)`` stores bytes that are not UTF-8 as TEXT:
apsw then raised a raw ``UnicodeDecodeError``), on PostgreSQL
(``tests/postgres/test_conformance_damaged_rows.py`` runs this module there)
through a connection of the store's pool. A changed content keeps valid text
that no longer matches the stored fingerprint (returned silently before, and
still on PostgreSQL until it was checked on read); a metadata or tags value
that is not JSON, an unknown tier, a time outside the years 1-9999 raised
``JSONDecodeError``, ``ValueError``, ``OverflowError``.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import embedmind
from embedmind import DamagedRecordError
from embedmind.drafts import fingerprint
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.timestamps import MAX_MICROS, MIN_MICROS

CONTENT = "Bob keeps the spare key under the blue flowerpot"
OTHER = "Carol waters the garden every Sunday morning"


def _on_sqlite(store: embedmind.Store) -> bool:
    return bool(store._backend.capabilities.name == "sqlite")


def _write_behind(store: embedmind.Store, sql: str, params: tuple[object, ...] = ()) -> Any:
    """Run ``sql`` (``?`` placeholders) on the store's rows, behind the engine's back."""
    if _on_sqlite(store):
        conn = apsw.Connection(store.path)
        conn.setbusytimeout(5000)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()
    with store._backend.database.write() as conn:  # type: ignore[attr-defined]
        cursor = conn.execute(sql.replace("?", "%s"), params)
        return cursor.fetchall() if cursor.description else []


def _damage(
    store: embedmind.Store, memory_id: str, sql_value: str, params: tuple[object, ...]
) -> None:
    _write_behind(
        store, f"UPDATE memories SET content = {sql_value} WHERE id = ?", (*params, memory_id)
    )


def _invalid_utf8(store: embedmind.Store, memory_id: str) -> None:
    if not _on_sqlite(store):
        pytest.skip("PostgreSQL text is always valid UTF-8")
    raw = CONTENT.encode().replace(b"blue", b"bl\xffe")
    _damage(store, memory_id, "CAST(? AS TEXT)", (raw,))


def _one_ascii_byte(store: embedmind.Store, memory_id: str) -> None:
    _damage(store, memory_id, "?", (CONTENT.replace("blue", "blve"),))


DAMAGES = {"invalid-utf8": _invalid_utf8, "ascii-byte": _one_ascii_byte}


@pytest.fixture(params=sorted(DAMAGES))
def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[embedmind.Store]:
    path = tmp_path / "d.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember(CONTENT, id="bad")
        store.remember(OTHER, id="good")
        store.remember_many([f"filler note number {i}" for i in range(300)])
        DAMAGES[request.param](store, "bad")
    with embedmind.Store.open(path, embedder=None) as store:
        yield store


def _raises_naming_bad() -> pytest.RaisesContext[DamagedRecordError]:
    return pytest.raises(DamagedRecordError, match=r"'bad'.*forget")


def test_get_names_the_damaged_memory(damaged: embedmind.Store) -> None:
    with _raises_naming_bad() as caught:
        damaged.get("bad")
    assert caught.value.ids == ("bad",)
    assert isinstance(caught.value, embedmind.StorageError)
    with _raises_naming_bad():
        damaged.get_many(["good", "bad"])


def test_reads_that_do_not_touch_it_still_work(damaged: embedmind.Store) -> None:
    assert damaged.get("good").content == OTHER  # type: ignore[union-attr]
    assert damaged.get_many(["good"])[0].content == OTHER
    assert damaged.recall("Carol waters the garden", k=1, mode="text").ids == ["good"]
    assert damaged.stats().live == 302


def test_iter_recall_and_export_refuse_to_return_it(damaged: embedmind.Store) -> None:
    with _raises_naming_bad():
        list(damaged.iter())
    with _raises_naming_bad():
        damaged.recall("spare key flowerpot", k=3, mode="text")
    with _raises_naming_bad():
        damaged.export_jsonl(io.StringIO())


@pytest.mark.parametrize("repair", ["forget", "remember", "redact"])
def test_the_repairs_the_message_names_work(damaged: embedmind.Store, repair: str) -> None:
    if repair == "forget":
        damaged.forget("bad")
        assert damaged.get("bad") is None
    elif repair == "remember":  # rewriting the original content (e.g. from a backup)
        damaged.remember(CONTENT, id="bad")
        assert damaged.get("bad").content == CONTENT  # type: ignore[union-attr]
    else:
        damaged.redact("bad", "the key was moved")
        assert damaged.get("bad").content == "the key was moved"  # type: ignore[union-attr]
    assert len(list(damaged.iter())) == 302 - (repair == "forget")
    out = io.StringIO()
    damaged.export_jsonl(out)
    assert out.getvalue().count('"type": "memory"') + out.getvalue().count(
        '"type":"memory"'
    ) == 302 - (repair == "forget")


@pytest.fixture(scope="module")
def one_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedmind.Store]:
    path = tmp_path_factory.mktemp("flip") / "f.mind"
    store = embedmind.Store.open(path, embedder=None)
    store.remember(CONTENT, id="bad")
    yield store
    store.close()


@given(position=st.integers(0, len(CONTENT) - 1), byte=st.integers(0, 255))
def test_any_changed_byte_is_reported_or_invisible_to_the_fingerprint(
    one_store: embedmind.Store, position: int, byte: int
) -> None:
    """Oracle: a read returns changed content only when its fingerprint is the original's.

    The fingerprint is the dedup hash (NFKC, case-folded, whitespace collapsed),
    so a change of case or of one blank for another is by design invisible.
    On PostgreSQL a byte that breaks UTF-8 is a text the server refuses: those
    examples write the replacement character instead, still a changed content.
    """
    raw = bytearray(CONTENT.encode())
    raw[position] = byte
    if _on_sqlite(one_store):
        _damage(one_store, "bad", "CAST(? AS TEXT)", (bytes(raw),))
    else:
        _damage(
            one_store, "bad", "?", (bytes(raw).decode("utf-8", "replace").replace("\x00", "?"),)
        )
    try:
        memory = one_store.get("bad")
    except DamagedRecordError as e:
        named = e.ids
    else:
        assert memory is not None
        assert fingerprint(memory.content) == fingerprint(CONTENT)
        return
    assert named == ("bad",)


# --- Every decoded field, every kind of bad value, every read path --------------------------

_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
_OUT_OF_RANGE_TIME = st.one_of(
    st.integers(MAX_MICROS + 1, 2**63 - 1), st.integers(-(2**63), MIN_MICROS - 1)
)
_NOT_A_CONFIDENCE = st.one_of(
    st.floats(min_value=1.0, exclude_min=True),  # up to and with +inf
    st.floats(max_value=0.0, exclude_max=True),  # down to and with -inf
)
_NOT_JSON = st.one_of(
    st.sampled_from(["", "{bad", '{"a": NaN}', '{"a": Infinity}', "[1", "{", "nul"]),
    _TEXT.map(lambda t: "{" + t),
)


def _json_but(*kinds: type) -> st.SearchStrategy[str]:
    """JSON texts of values that are none of ``kinds`` (as the engine would write them)."""
    import json

    values = st.one_of(
        st.none(), st.booleans(), st.integers(-5, 5), _TEXT, st.lists(st.integers(), max_size=2),
        st.dictionaries(_TEXT, st.integers(), max_size=2), st.lists(st.none(), min_size=1, max_size=2),
    )  # fmt: skip
    return values.filter(lambda v: not isinstance(v, kinds)).map(
        lambda v: json.dumps(v, ensure_ascii=False)
    )


_TAGS_NOT_JSON_STRINGS = st.one_of(
    _NOT_JSON, _json_but(list), st.sampled_from(["[1]", "[null]", '["a", 2]', '[["a"]]'])
)
_PG_TAGS = st.sampled_from(["{NULL}", '{"a",NULL}', "{{a,b}}"])
"""PostgreSQL ``text[]`` literals the engine never writes (a NULL element, two dimensions)."""

BAD_VALUES: dict[str, tuple[str, st.SearchStrategy[Any]]] = {
    # field: (the value as SQL over ``?``, the bad values)
    "metadata": ("?", st.one_of(_NOT_JSON, _json_but(dict))),
    "tags": ("?", _TAGS_NOT_JSON_STRINGS),
    "tier": (
        "?",
        _TEXT.filter(lambda t: t not in {"working", "episodic", "semantic", "procedural"}),
    ),
    "level": ("?", _TEXT.filter(lambda t: t not in {"explicit", "deduced"})),
    "created_at": ("?", _OUT_OF_RANGE_TIME),
    "updated_at": ("?", _OUT_OF_RANGE_TIME),
    "valid_from": ("?", _OUT_OF_RANGE_TIME),
    "valid_to": ("?", _OUT_OF_RANGE_TIME),
    "expires_at": ("?", _OUT_OF_RANGE_TIME),
    "last_accessed_at": ("?", _OUT_OF_RANGE_TIME),
    "confidence": ("?", _NOT_A_CONFIDENCE),
    "access_count": ("?", st.integers(-(2**63), -1)),
    "content": ("?", _TEXT.filter(lambda t: fingerprint(t) != fingerprint(CONTENT))),
}
"""Each field a read decodes and values of it the engine never writes."""
_PG_COLUMN = {"metadata": "metadata_text"}
"""Where a field lives on PostgreSQL when it is not its own column (the caller's JSON text)."""
_PG_GUARDS = {
    "tier": "memories_tier_check",
    "level": "memories_level_check",
    "confidence": "memories_confidence_range",
}
"""The CHECK that refuses the field's bad values on PostgreSQL: dropped first, as a store
written before it (or by hand, without it) would hold them."""


def _set_behind(store: embedmind.Store, memory_id: str, field: str, value: object) -> None:
    column, sql_value = field, "?"
    if not _on_sqlite(store):
        column = _PG_COLUMN.get(field, field)
        if field in _PG_GUARDS:
            _write_behind(
                store, f"ALTER TABLE memories DROP CONSTRAINT IF EXISTS {_PG_GUARDS[field]}"
            )
        if field == "tags":
            sql_value = "CAST(? AS text[])"
    _write_behind(
        store, f"UPDATE memories SET {column} = {sql_value} WHERE id = ?", (value, memory_id)
    )


def _original(store: embedmind.Store, memory_id: str, field: str) -> object:
    column = field if _on_sqlite(store) else _PG_COLUMN.get(field, field)
    return _write_behind(store, f"SELECT {column} FROM memories WHERE id = ?", (memory_id,))[0][0]


@pytest.fixture(scope="module")
def graph_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedmind.Store]:
    """A store where ``bad`` is reached by every read: by id, text, vector, graph, entity, export."""
    path = tmp_path_factory.mktemp("fields") / "g.mind"
    store = embedmind.Store.open(path, embedder=HashingEmbedder(32))
    store.remember("Bob kept the spare key in the drawer", id="old")
    store.remember(OTHER, id="good")
    store.remember(
        CONTENT, id="bad", metadata={"topic": "keys"}, tags=["home"], entities=["Bob"],
        relations=[("refines", "good")], supersedes=["old"],
    )  # fmt: skip
    yield store
    store.close()


def _exported(store: embedmind.Store) -> str:
    out = io.StringIO()
    store.export_jsonl(out)
    return out.getvalue()


READS: dict[str, Callable[[embedmind.Store], object]] = {
    "get": lambda s: [s.get("bad")],
    "get_many": lambda s: s.get_many(["good", "bad"]),
    "get-as-of": lambda s: [s.get("bad", as_of=dt.datetime.now(dt.timezone.utc))],
    "iter": lambda s: list(s.iter(include_expired=True, include_superseded=True)),
    "recall-text": lambda s: [h.memory for h in s.recall(CONTENT, k=5, mode="text")],
    "recall-vector": lambda s: [h.memory for h in s.recall(CONTENT, k=5, mode="vector")],
    "recall-hybrid": lambda s: [h.memory for h in s.recall(CONTENT, k=5, mode="hybrid")],
    "lineage": lambda s: list(s.lineage("old").newer),
    "related": lambda s: [r.memory for r in s.related("good")],
    "neighbors": lambda s: [r.memory for r in s.neighbors("old", depth=2)],
    "entity": lambda s: s.entity_members("Bob"),
    "export": _exported,
}
"""Every read that returns memories, each reaching ``bad`` (when it is visible at all)."""
MUST_RAISE = ("get", "get_many", "export")
"""The reads that never filter ``bad`` out by time: they always meet the damage."""


def _outcome(read: Callable[[embedmind.Store], object], store: embedmind.Store) -> object:
    """What ``read`` returned, or the DamagedRecordError it raised (anything else propagates)."""
    try:
        return read(store)
    except DamagedRecordError as e:
        return e


def _returned_bad(result: object) -> bool:
    if isinstance(result, str):  # the export's lines
        return '"bad"' in result
    return any(m is not None and m.id == "bad" for m in result)  # type: ignore[attr-defined]


@pytest.mark.parametrize("field", sorted(BAD_VALUES))
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_every_damaged_field_is_named_by_every_read(
    graph_store: embedmind.Store, field: str, data: st.DataObject
) -> None:
    """Oracle: each read raises DamagedRecordError naming ``bad`` and the field, or leaves it out.

    Leaving it out is right only where the damaged value itself hides the
    memory from that read (a time far in the past or future); ``get``,
    ``get_many`` and the export read it whatever it holds. No read raises
    anything else, and none returns the memory.
    """
    _, values = BAD_VALUES[field]
    if not _on_sqlite(graph_store) and field == "tags":
        values = _PG_TAGS
    if not _on_sqlite(graph_store) and field == "confidence":  # SQLite stores NaN as NULL
        values = st.one_of(values, st.just(float("nan")))
    value = data.draw(values, label=field)
    original = _original(graph_store, "bad", field)
    _set_behind(graph_store, "bad", field, value)
    try:
        for name, read in READS.items():
            outcome = _outcome(read, graph_store)
            if isinstance(outcome, DamagedRecordError):
                assert outcome.ids == ("bad",), name
                assert outcome.reason.split()[0] == field, (name, outcome.reason)
            else:
                assert name not in MUST_RAISE, f"{name} returned a memory damaged in {field}"
                assert not _returned_bad(outcome), f"{name} returned a memory damaged in {field}"
    finally:
        _set_behind(graph_store, "bad", field, original)
    assert graph_store.get("bad").content == CONTENT  # type: ignore[union-attr]


def test_a_confidence_the_engine_would_refuse_is_refused_by_the_schema_or_the_read(
    graph_store: embedmind.Store,
) -> None:
    """NaN: SQLite stores it as NULL, which ``NOT NULL`` refuses; PostgreSQL's CHECK refuses it."""
    if not _on_sqlite(graph_store):
        pytest.skip("PostgreSQL: tests/postgres/test_schema_refuses_damage.py")
    with pytest.raises(apsw.ConstraintError):
        _set_behind(graph_store, "bad", "confidence", float("nan"))


def test_damage_beyond_the_memory_fields_is_named_by_the_export(
    graph_store: embedmind.Store,
) -> None:
    if not _on_sqlite(graph_store):
        pytest.skip(
            "PostgreSQL: its CHECK refuses the value (tests/postgres/test_schema_refuses_damage.py)"
        )
    _set_behind(graph_store, "bad", "prior_confidence", 2.5)
    try:
        with pytest.raises(DamagedRecordError, match="prior_confidence") as caught:
            _exported(graph_store)
        assert caught.value.ids == ("bad",)
    finally:
        _set_behind(graph_store, "bad", "prior_confidence", None)


def test_several_damaged_memories_are_named_at_once(graph_store: embedmind.Store) -> None:
    _set_behind(graph_store, "bad", "access_count", -1)
    _set_behind(graph_store, "good", "content", "Carol waters nothing")
    try:
        with pytest.raises(DamagedRecordError) as caught:
            graph_store.get_many(["good", "bad"])
        assert sorted(caught.value.ids) == ["bad", "good"]
        assert "access_count -1 is not a count" in caught.value.reason
        assert "content no longer matches its fingerprint" in caught.value.reason
    finally:
        _set_behind(graph_store, "bad", "access_count", 0)
        _set_behind(graph_store, "good", "content", OTHER)


def test_doctor_verify_lists_what_the_reads_refuse(graph_store: embedmind.Store) -> None:
    """``embedmind doctor --verify`` (named by every DamagedRecordError) applies the reads' check."""
    if not _on_sqlite(graph_store):
        pytest.skip("verify scans SQLite stores")
    from embedmind.verification import verify

    _set_behind(graph_store, "bad", "tier", "sematic")
    _set_behind(graph_store, "good", "prior_confidence", -1.0)
    try:
        found = {d.id: d.reason for d in verify(graph_store).damaged}
    finally:
        _set_behind(graph_store, "bad", "tier", "semantic")
        _set_behind(graph_store, "good", "prior_confidence", None)
    assert found == {
        "bad": "tier 'sematic' is not one of working, episodic, semantic, procedural",
        "good": "prior_confidence -1.0 is not a number in [0, 1]",
    }
    assert verify(graph_store).ok


def test_a_fragment_text_that_is_not_utf8_is_named_by_the_fragment_query(
    graph_store: embedmind.Store,
) -> None:
    if not _on_sqlite(graph_store):
        pytest.skip("PostgreSQL text is always valid UTF-8")
    graph_store.fragments.put("bad", [((0, 3), "Bob keeps"), ((4, 9), "the spare key")])
    _write_behind(
        graph_store,
        "UPDATE fragments SET text = CAST(? AS TEXT) WHERE text = 'the spare key'",
        (b"the sp\xffre key",),
    )
    try:
        with pytest.raises(DamagedRecordError, match="fragment text") as caught:
            graph_store.fragments.query("the spare key", k=2)
        assert caught.value.ids == ("bad",)
    finally:
        graph_store.fragments.remove("bad")


# --- Entity names, relations and namespace links ------------------------------------------


def _set_graph(store: embedmind.Store, sql: str, params: tuple[object, ...]) -> Callable[[], None]:
    """Run ``sql`` behind the engine's back; return what undoes it (``sql`` with params swapped)."""
    _write_behind(store, sql, params)
    return lambda: _write_behind(store, sql, (params[1], params[0]))


def _not_utf8(store: embedmind.Store) -> None:
    if not _on_sqlite(store):
        pytest.skip("PostgreSQL text is always valid UTF-8")


def _entity_name(store: embedmind.Store, data: st.DataObject) -> Callable[[], None]:
    _not_utf8(store)
    sql = "UPDATE entities SET name = CAST(? AS TEXT) WHERE name = CAST(? AS TEXT)"
    return _set_graph(store, sql, (b"B\xffob", b"Bob"))


def _relation_kind(store: embedmind.Store, data: st.DataObject) -> Callable[[], None]:
    _not_utf8(store)
    sql = "UPDATE relations SET kind = CAST(? AS TEXT) WHERE kind = CAST(? AS TEXT)"
    return _set_graph(store, sql, (b"ref\xffnes", b"refines"))


def _relation_created_at(store: embedmind.Store, data: st.DataObject) -> Callable[[], None]:
    [(original,)] = _write_behind(store, "SELECT created_at FROM relations WHERE kind = 'refines'")
    value = data.draw(_OUT_OF_RANGE_TIME, label="created_at")
    sql = "UPDATE relations SET created_at = ? WHERE created_at = ? AND kind = 'refines'"
    return _set_graph(store, sql, (value, original))


GRAPH_DAMAGES: dict[str, tuple[Callable[..., Callable[[], None]], str, tuple[str, ...]]] = {
    # damage: (how, the reason's first words, the reads that always meet it)
    "entity-name": (_entity_name, "entities:", ("entities_of", "export")),
    "relation-kind": (
        _relation_kind,
        "relations:",
        ("related-from", "related-to", "neighbors", "recall-expanded", "export"),
    ),
    "relation-created_at": (_relation_created_at, "relations:", ("export",)),
}
"""Damage to what ``bad`` carries beside its row: its entity name, its relation to ``good``."""

GRAPH_READS: dict[str, Callable[[embedmind.Store], object]] = {
    "entities_of": lambda s: s.entities_of("bad"),
    "entity_members": lambda s: s.entity_members("Bob"),
    "related-from": lambda s: s.related("bad"),
    "related-to": lambda s: s.related("good"),
    "neighbors": lambda s: s.neighbors("old", depth=2),
    "lineage": lambda s: s.lineage("old"),
    "recall-expanded": lambda s: s.recall(CONTENT, k=1, mode="text", expand_related=True),
    "export": _exported,
}
"""Every read of entity names and relations, each reaching ``bad``'s."""


@pytest.mark.parametrize("damage", sorted(GRAPH_DAMAGES))
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_damaged_entities_and_relations_are_named_by_every_read(
    graph_store: embedmind.Store, damage: str, data: st.DataObject
) -> None:
    """Oracle: each read raises DamagedRecordError naming ``bad`` (whose they are), or is unaffected.

    SQLite raised a raw ``UnicodeDecodeError`` for a name or kind that is not
    UTF-8; an export wrote a relation time that its own import refuses.
    """
    how, reason, must_raise = GRAPH_DAMAGES[damage]
    undo = how(graph_store, data)
    try:
        for name, read in GRAPH_READS.items():
            outcome = _outcome(read, graph_store)
            if isinstance(outcome, DamagedRecordError):
                assert outcome.ids == ("bad",), name
                assert outcome.reason.startswith(reason), (name, outcome.reason)
                assert "forget" in str(outcome)
            else:
                assert name not in must_raise, f"{name} did not notice the damaged {damage}"
    finally:
        undo()
    assert graph_store.entities_of("bad") == ["Bob"]
    assert [(r.memory.id, r.kind) for r in graph_store.related("good")] == [("bad", "refines")]


_LINK = ("team", "shared")
_PG_LINK_TIERS = st.sampled_from(["{sematic}", "{NULL}", "{semantic,NULL}", "{{semantic}}"])
"""PostgreSQL ``text[]`` values of a link's tiers the engine never writes."""
LINK_DAMAGES: dict[str, st.SearchStrategy[Any]] = {
    "tiers": st.one_of(
        _NOT_JSON,
        _json_but(list),
        st.sampled_from(['["sematic"]', "[1]", "[null]", '["semantic", 2]', '[["semantic"]]']),
    ),
    "created_at": _OUT_OF_RANGE_TIME,
    "note": st.just(b"a n\xffte"),  # SQLite only: text that is not UTF-8
    "src": st.just(b"te\xffam"),
    "dst": st.just(b"sh\xffred"),
}
"""Each column of a namespace link and values of it the engine never writes."""
LINK_READS: dict[str, Callable[[embedmind.Store], object]] = {
    "links": lambda s: s.links(),
    "links-from": lambda s: s.links("team"),
    "export": _exported,
    "recall-follow": lambda s: s.recall(OTHER, k=2, namespace="team", follow_links=True),
}
"""Every read of namespace links (a recall that follows them reads them all)."""


@pytest.mark.parametrize("column", sorted(LINK_DAMAGES))
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_a_damaged_namespace_link_is_named_by_every_read(
    graph_store: embedmind.Store, column: str, data: st.DataObject
) -> None:
    """Oracle: each read raises DamagedRecordError naming the link and the column.

    Before: ``JSONDecodeError``, ``ValueError`` (a tier), ``OverflowError``,
    ``UnicodeDecodeError`` (SQLite), ``ValueError`` and ``OverflowError``
    (PostgreSQL), from ``links``, the export and a recall that follows links.
    """
    values = LINK_DAMAGES[column]
    if column in ("note", "src", "dst"):
        _not_utf8(graph_store)
    if column == "tiers" and not _on_sqlite(graph_store):
        values = _PG_LINK_TIERS
    graph_store.link_namespaces(*_LINK, tiers=["semantic"], note="a note")
    value = data.draw(values, label=column)
    sql_value = "CAST(? AS TEXT)" if isinstance(value, bytes) else "?"
    if column == "tiers" and not _on_sqlite(graph_store):
        sql_value = "CAST(? AS text[])"
    _write_behind(
        graph_store,
        f"UPDATE namespace_links SET {column} = {sql_value} WHERE src = ? AND dst = ?",
        (value, *_LINK),
    )
    try:
        for name, read in LINK_READS.items():
            outcome = _outcome(read, graph_store)
            if not isinstance(outcome, DamagedRecordError):
                assert name == "links-from" and column == "src", f"{name} read a damaged {column}"
                assert outcome == []
                continue
            assert outcome.ids == (), name
            assert outcome.link is not None and len(outcome.link) == 2, name
            if column not in ("src", "dst"):  # else it shows the bytes as it can
                assert outcome.link == _LINK, name
            assert outcome.reason.startswith(column), (name, outcome.reason)
            assert "store.unlink('team'" in str(outcome) or column == "src", str(outcome)
    finally:
        _write_behind(graph_store, "DELETE FROM namespace_links")
    assert graph_store.links() == []
