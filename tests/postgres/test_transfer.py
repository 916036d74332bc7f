"""Export and import facets: the PostgreSQL backend writes the same JSONL lines as SQLite.

The same memories (metadata of every JSON shape, tags, sessions, entities,
relations, vectors, the fields only an import restores, a tombstone) are
written through the protocol into a SQLite backend and a PostgreSQL one; the
memory lines an export builds from ``Records.export_page`` and the graph and
vector facets — exactly as the engine's exporter does — are equal byte for
byte. The PostgreSQL lines, parsed by the engine's import parser and written
back through ``RecordWrites.restore_fields``, export the lines SQLite's re-import exports.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from embedmind.backend.postgres.backend import FACTORY as PG
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.backend.sqlite.backend import FACTORY as SQLITE
from embedmind.backend.values import OpenOptions
from embedmind.drafts import prepare
from embedmind.engine import transfer_files, transfer_lines
from embedmind.errors import DamagedRecordError, InvalidInputError
from embedmind.model import Draft

DIMS = 3
NOW = 1_700_000_000_000_000
PAGE = 3  # small, so the export pages through several pages
_schemas = itertools.count()


def _identity() -> dict[str, str]:
    return {"model_id": "test", "dims": str(DIMS), "metric": "cosine", "fingerprint": "f"}


@pytest.fixture(scope="module")
def pg_url(pg_server: ThrowawayServer, pg_dsn: str) -> str:
    return pg_server.url(str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]))


def _open_pg(pg_url: str) -> Any:
    backend = PG.open(OpenOptions(f"{pg_url}?schema=tr{next(_schemas)}"))
    with backend.write() as w:
        w.meta.write_identity(_identity())
    return backend


def _open_sqlite(path: Path) -> Any:
    backend = SQLITE.open(OpenOptions(str(path)))
    backend.configure_vectors(DIMS)
    with backend.write() as w:
        w.meta.write_identity(_identity())
    return backend


def _vector(i: int) -> bytes:
    v = np.asarray([1.0, i % 5, (i * 7) % 3 + 0.5], dtype=np.float32)
    return (v / np.linalg.norm(v)).astype("<f4").tobytes()


def _write(
    backend: Any, drafts: list[Draft], restored: dict[str, dict[str, Any]], forget: set[str]
) -> None:
    """Write ``drafts`` through the protocol as a remember and an import would."""
    prepared = [prepare(d, NOW + i) for i, d in enumerate(drafts)]
    with backend.write() as w:
        keys = w.records.insert_many(prepared)
        by_id = dict(zip((p.id for p in prepared), keys, strict=True))
        w.records.index_text([(k, p.content) for k, p in zip(keys, prepared, strict=True)])
        for i, (key, p) in enumerate(zip(keys, prepared, strict=True)):
            w.graph.add_entities(key, p.entities)
            w.graph.add_relations(key, [(kind, by_id[t]) for kind, t in p.relations], NOW + i)
            w.records.put_vectors(key, [(0, len(p.content))], [_vector(i)])
            if p.id in restored:
                w.records.restore_fields(key, restored[p.id])
            if p.id in forget:
                w.records.mark_forgotten(key, NOW + 99)


def _lines(backend: Any) -> list[str]:
    """The memory lines of an export with vectors, built as the engine's exporter builds them."""
    out: list[str] = []
    with backend.read() as r:
        after = 0
        while True:
            page = r.records.export_page(after, PAGE)
            if page:
                after = page[-1]["key"]
            for item in page:
                key = item.pop("key")
                item["entities"] = r.graph.entity_names(key)
                item["relations"] = [list(edge) for edge in r.graph.outgoing(key)]
                item["vectors"] = [
                    {"start": s, "end": e, "f32le": base64.b64encode(blob).decode("ascii")}
                    for s, e, blob in r.channels.vector_rows(key)
                ]
                out.append(transfer_files.line({"type": "memory", **item}))
            if len(page) < PAGE:
                return out


def _import(backend: Any, lines: list[str]) -> None:
    """Write parsed export lines back as the engine's importer does (restore_fields included)."""
    records = [transfer_lines.parsed_memory(transfer_lines.parse(1, t), DIMS) for t in lines]
    with backend.write() as w:
        keys = w.records.insert_many([r.prepared for r in records])
        by_id = dict(zip((r.prepared.id for r in records), keys, strict=True))
        for key, r in zip(keys, records, strict=True):
            w.records.restore_fields(key, r.restored)
            w.graph.add_entities(key, r.prepared.entities)
            assert r.vectors is not None
            spans = [(int(s), int(e)) for s, e in r.vectors.spans]
            blobs = [np.asarray(v, dtype="<f4").tobytes() for v in r.vectors.vectors]
            w.records.put_vectors(key, spans, blobs)
        w.graph.add_relation_rows(
            [(by_id[r.prepared.id], k, by_id[t], c) for r in records for k, t, c in r.relations]
        )


def _drafts() -> tuple[list[Draft], dict[str, dict[str, Any]], set[str]]:
    drafts = [
        Draft("alice drinks green tea", id="a", namespace="u/alice", session_id="s1",
              metadata={"zeta": 1, "alpha": [1.5, {"y": None, "b": True}], "big": 1e20,
                        "neg": -0.0, "tiny": 1e-7, "int64": 2**63 - 1, "é": "naïve ☕"},
              tags=["pref", "drink"], entities=["alice", "tea"]),
        Draft("bob drinks coffee", id="b", namespace="u/bob", tier="episodic",
              agent="agent-7", confidence=0.25, expires_at=None, entities=["bob"],
              relations=[("knows", "a")]),
        Draft("alice moved to paris", id="c", namespace="u/alice", session_id="s1",
              metadata={"topic": "move"}, relations=[("updates", "a"), ("knows", "b")]),
        Draft("a forgotten line", id="d", namespace="u/alice"),
        Draft("deduced: alice likes hot drinks", id="e", namespace="u/alice", level="deduced",
              metadata={}, tags=[]),
    ]  # fmt: skip
    restored = {
        "a": {"updated_at": NOW + 50, "superseded_by": "c", "valid_to": NOW + 40,
              "access_count": 3, "last_accessed_at": NOW + 45},
        "b": {"updated_at": NOW + 60, "contradicted_by": "c", "prior_confidence": 0.75,
              "access_count": 0},
    }  # fmt: skip
    return drafts, restored, {"d"}


def test_export_lines_equal_sqlites_and_survive_an_import(pg_url: str, tmp_path: Path) -> None:
    drafts, restored, forget = _drafts()
    sqlite, pg = _open_sqlite(tmp_path / "s.mind"), _open_pg(pg_url)
    try:
        _write(sqlite, drafts, restored, forget)
        _write(pg, drafts, restored, forget)
        expected = _lines(sqlite)
        assert len(expected) == 4  # the tombstone is not exported
        assert '"big":1e+20' in expected[0] and expected[0].index('"zeta"') < expected[0].index(
            '"alpha"'
        )  # the caller's key order and number types
        assert _lines(pg) == expected
        # The importer normalises the file's vectors again (their last bits may
        # move), so the re-imported lines are compared with SQLite's re-import.
        sqlite_again, pg_again = _open_sqlite(tmp_path / "again.mind"), _open_pg(pg_url)
        try:
            _import(sqlite_again, expected)
            _import(pg_again, _lines(pg))
            reimported = _lines(sqlite_again)
            assert [line.split('"vectors"')[0] for line in reimported] == [
                line.split('"vectors"')[0] for line in expected
            ]
            assert _lines(pg_again) == reimported
        finally:
            sqlite_again.close()
            pg_again.close()
    finally:
        sqlite.close()
        pg.close()


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=3),
    max_leaves=8,
)  # fmt: skip


@pytest.fixture(scope="module")
def store_pair(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """One SQLite and one PostgreSQL store, emptied by each example that uses them."""
    sqlite = _open_sqlite(tmp_path_factory.mktemp("pair") / "s.mind")
    pg = _open_pg(pg_url)
    yield sqlite, pg
    sqlite.close()
    pg.close()


def _holds_nul(value: object) -> bool:
    """Whether any string of a JSON value, key or value, holds NUL (U+0000)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_holds_nul(v) for v in value)
    return False


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(metadata=st.dictionaries(st.text(max_size=6), _json, max_size=5))
@example(metadata={"\\u0000": None})  # the escape's six characters, not NUL: PostgreSQL stores it
@example(metadata={"k": "a\x00b"})
def test_any_metadata_exports_as_sqlite_exports_it(
    store_pair: tuple[Any, Any], metadata: dict[str, Any]
) -> None:
    draft = Draft("a memory with metadata", id="m", metadata=metadata)
    try:
        prepare(draft, NOW)
    except InvalidInputError:
        return  # metadata the engine refuses never reaches a backend
    sqlite, pg = store_pair
    try:
        _write(sqlite, [draft], {}, set())
        if _holds_nul(metadata):
            with pytest.raises(InvalidInputError, match="NUL"):
                _write(pg, [draft], {}, set())
            with pg.read() as r:
                assert r.records.find("m") is None
            return
        _write(pg, [draft], {}, set())
        assert _lines(pg) == _lines(sqlite)
        with pg.read() as r:
            assert r.records.load_ids(["m"])["m"].metadata == metadata
    finally:
        for backend in store_pair:
            with backend.write() as w:
                found = w.records.find("m")
                if found is not None:
                    w.records.delete([found.key])


@pytest.mark.parametrize(
    ("draft", "field"),
    [
        (Draft("nul \x00 inside", id="n"), "content"),
        (
            Draft("fine", id="n", metadata={"k": ["ok", {"deep": "a\x00b"}]}),
            "metadata['k'][1]['deep']",
        ),
    ],
)
def test_nul_is_refused_before_anything_is_written(pg_url: str, draft: Draft, field: str) -> None:
    pg = _open_pg(pg_url)
    try:
        with pytest.raises(InvalidInputError, match="NUL") as caught:
            _write(pg, [Draft("written first", id="w"), draft], {}, set())
        assert caught.value.field == field
        with pg.read() as r:
            assert r.records.live_count() == 0
    finally:
        pg.close()


def test_restore_fields_clears_what_the_import_leaves_out(pg_url: str) -> None:
    pg = _open_pg(pg_url)
    try:
        drafts, restored, _ = _drafts()
        _write(pg, drafts[:1], restored, set())
        with pg.write() as w:
            key = w.records.find("a").key
            w.records.restore_fields(key, {"updated_at": NOW + 7, "access_count": 0})
        with pg.read() as r:
            [item] = r.records.export_page(0, 10)
        assert item["updated_at"] == NOW + 7
        assert (item["superseded_by"], item["valid_to"], item["access_count"]) == (None, None, 0)
    finally:
        pg.close()


def test_a_changed_content_is_refused_by_the_export(pg_url: str) -> None:
    pg = _open_pg(pg_url)
    try:
        _write(pg, [Draft("sound content", id="x"), Draft("other", id="y")], {}, set())
        with pg.database.write() as conn:  # damage by hand, behind the engine's back
            conn.execute("UPDATE memories SET content = 'tampered' WHERE id = 'x'")
        with pg.read() as r, pytest.raises(DamagedRecordError, match="'x'"):
            r.records.export_page(0, 10)
    finally:
        pg.close()
