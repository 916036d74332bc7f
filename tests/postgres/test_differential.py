"""The PostgreSQL backend answers as the SQLite backend does, through the protocol alone.

A hypothesis state machine drives both backends with the same writes — remember
batches (namespaces, tags, tiers, sessions, metadata, expiry, validity,
entities), forget, delete, supersede and restore, reinforce, retier, move — the
calls the engine's commit path makes, and after each step compares what the
engine reads: pages (scopes with wildcards, ``where``, tags, tiers, expiry,
``as_of``, superseded and forgotten rows), text and vector channels with a
``k`` above the population (so ties at the cut cannot differ), TTL expiry,
namespace activity, entities and statistics. SQLite is the oracle. Keys are
compared through the ids they name (each backend assigns its own).

This is the backend-level slice of the conformance suite; the engine's own
behaviour tests run over both once ``Store.open`` reaches this backend.
"""

from __future__ import annotations

import datetime as dt
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from embedmind.backend.postgres.backend import FACTORY as PG
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.backend.sqlite.backend import FACTORY as SQLITE
from embedmind.backend.values import OpenOptions, Space
from embedmind.drafts import prepare
from embedmind.model import Draft
from embedmind.query.selection import Selection

DIMS = 4
T0 = 1_700_000_000_000_000
HOUR = 3_600_000_000
NAMESPACES = (
    "u/alice",
    "u/alice/notes",
    "u/alice_x",
    "u/bob",
    "team",
    "u/%",
    "u/a_b/c",
    "u/aXb/c",
    "u/%/x",
)  # fmt: skip  -- roots with LIKE wildcards beside names they would match unescaped
WORDS = ("tea", "coffee", "paris", "green", "dog", "trip", "book", "alice", "river")
_runs = itertools.count()


def _vector(seed: int) -> bytes:
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return (v / np.linalg.norm(v)).astype("<f4").tobytes()


def _draft(
    words: list[str], ns: str, tags: list[str], tier: str, session: str | None,
    topic: str | int | None, ttl: int | None, entities: list[str],
) -> Draft:  # fmt: skip
    metadata = {} if topic is None else {"topic": topic, "n": len(words)}
    expires = None if ttl is None else _instant(T0 + ttl * HOUR)
    return Draft(" ".join(words), namespace=ns, tags=tags, tier=tier, session_id=session,
                 metadata=metadata, expires_at=expires, entities=entities)  # fmt: skip


_drafts = st.lists(
    st.builds(
        _draft,
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
        st.sampled_from(NAMESPACES),
        st.lists(st.sampled_from(("pref", "work", "x%")), max_size=2, unique=True),
        st.sampled_from(("semantic", "episodic", "working")),
        st.sampled_from((None, "s1", "s2")),
        st.sampled_from((None, "tea", "travel", 3)),
        st.sampled_from((None, 2, 30)),
        st.lists(st.sampled_from(("alice", "bob", "paris")), max_size=2, unique=True),
    ),
    min_size=1,
    max_size=4,
)


def _instant(micros: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(micros / 1e6, tz=dt.UTC)


_selections = st.builds(
    lambda ns, where, tags, tiers, expired, superseded, forgotten, as_of, at: Selection.of(
        T0 + at * HOUR, ns, where, tags=tags, tiers=tiers, include_expired=expired,
        include_superseded=superseded, include_forgotten=forgotten,
        as_of=None if as_of is None else T0 + as_of * HOUR,
    ),
    st.sampled_from((None, "u/alice", "u/*", "u/alice/*", "u/%", "team", "u/a_b/*", "u/%/*")),
    st.sampled_from((None, {"topic": "tea"}, {"topic": {"$in": ["tea", "travel"]}},
                     {"n": {"$gte": 3}}, {"$not": {"topic": "tea"}}, {"topic": {"$exists": False}})),
    st.sampled_from(((), ("pref",), ("x%",))),
    st.sampled_from(((), ("semantic",), ("episodic", "working"))),
    st.booleans(), st.booleans(), st.booleans(),
    st.sampled_from((None, 0, 5, 40)),
    st.sampled_from((1, 10, 50)),
)  # fmt: skip


class BothBackends(RuleBasedStateMachine):
    """The same protocol calls on a SQLite and a PostgreSQL backend."""

    pg_url: str
    tmp: Path

    def __init__(self) -> None:
        super().__init__()
        run = next(_runs)
        self.sqlite = SQLITE.open(OpenOptions(str(self.tmp / f"d{run}.mind")))
        self.sqlite.configure_vectors(DIMS)
        self.pg = PG.open(OpenOptions(f"{self.pg_url}?schema=diff{run}"))
        identity = {"model_id": "t", "dims": str(DIMS), "metric": "cosine", "fingerprint": "f"}
        for b in self.both:
            with b.write() as w:
                w.meta.write_identity(identity)
        self.ids: list[str] = []
        self.serial = itertools.count()
        self.clock = T0

    @property
    def both(self) -> tuple[Any, Any]:
        return self.sqlite, self.pg

    def teardown(self) -> None:
        self.sqlite.close()
        self.pg.close()

    def _tick(self) -> int:
        self.clock += 1_000
        return self.clock

    def _each(self, action: Any) -> list[Any]:
        out = []
        for b in self.both:
            with b.write() as w:
                out.append(action(w))
        assert out[0] == out[1]
        return out

    @rule(drafts=_drafts)
    def remember(self, drafts: list[Draft]) -> None:
        now = self._tick()
        named = []
        for d in drafts:
            n = next(self.serial)
            named.append((n, Draft(**{**d.__dict__, "id": f"m{n}"})))
        prepared = [prepare(d, now) for _, d in named]

        def write(w: Any) -> None:
            keys = w.records.insert_many(prepared)
            w.records.index_text([(k, p.content) for k, p in zip(keys, prepared, strict=True)])
            for key, p, (n, _) in zip(keys, prepared, named, strict=True):
                w.records.put_vectors(key, [(0, len(p.content))], [_vector(n)])
                w.graph.add_entities(key, p.entities)

        self._each(write)
        self.ids += [p.id for p in prepared]

    def _key(self, w: Any, memory_id: str) -> int | None:
        found = w.records.find(memory_id)
        return None if found is None else found.key

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        memory_id = data.draw(st.sampled_from(self.ids))
        now = self._tick()

        def write(w: Any) -> bool:
            found = w.records.find(memory_id)
            if found is None or found.forgotten:
                return False
            w.records.mark_forgotten(found.key, now)
            w.records.unindex_text([found.key])
            w.records.remove_vectors(found.key, Space.MEMORY)
            return True

        self._each(write)

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        memory_id = data.draw(st.sampled_from(self.ids))

        def write(w: Any) -> bool:
            key = self._key(w, memory_id)
            if key is not None:
                w.records.delete([key])
            return key is not None

        self._each(write)

    @precondition(lambda self: len(self.ids) >= 2)
    @rule(data=st.data(), restore=st.booleans())
    def supersede(self, data: st.DataObject, restore: bool) -> None:
        old, new = data.draw(st.lists(st.sampled_from(self.ids), min_size=2, max_size=2,
                                      unique=True))  # fmt: skip
        now = self._tick()

        def write(w: Any) -> None:
            key = self._key(w, old)
            if key is None:
                return
            if restore:
                w.graph.restore(key, now)
            else:
                w.graph.mark_superseded(key, new, now, now)

        self._each(write)

    @precondition(lambda self: self.ids)
    @rule(data=st.data(), tier=st.sampled_from(("semantic", "working")),
          ttl=st.sampled_from((None, 1, 20)), ns=st.sampled_from(NAMESPACES))  # fmt: skip
    def change(self, data: st.DataObject, tier: str, ttl: int | None, ns: str) -> None:
        chosen = data.draw(st.lists(st.sampled_from(self.ids), min_size=1, max_size=3,
                                    unique=True))  # fmt: skip
        now = self._tick()
        how = data.draw(st.sampled_from(("reinforce", "retier", "move")))

        def write(w: Any) -> Any:
            keys = [k for k in (self._key(w, i) for i in chosen) if k is not None]
            if how == "reinforce":
                return w.lifecycle.reinforce(keys, now, T0 + 25 * HOUR)
            if how == "retier":
                for key in keys:
                    w.lifecycle.retier(key, tier, None if ttl is None else T0 + ttl * HOUR, now)
                return len(keys)
            return w.lifecycle.move(keys, ns, now)

        self._each(write)

    @rule(selection=_selections, words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
          seed=st.integers(0, 50))  # fmt: skip
    def reads_agree(self, selection: Selection, words: list[str], seed: int) -> None:
        answers = []
        for b in self.both:
            with b.read() as r:
                answers.append(self._read(r, selection, " ".join(words), seed))
        assert answers[1] == answers[0]

    def _read(self, r: Any, selection: Selection, text: str, seed: int) -> dict[str, Any]:
        page = r.records.page(selection, None, 1000)
        keys = [k for _, k, _ in page]
        id_of = {k: m.id for _, k, m in page}
        everyone = r.records.identities(list(range(1, 10_000)))
        name = {k: i.id for k, i in everyone.items()} | id_of
        query = np.frombuffer(_vector(seed), dtype="<f4")
        return {
            "page": [(m.id, m.namespace, m.tier, m.tags, m.metadata, m.superseded_by,
                      m.forgotten, m.expires_at, m.access_count) for _, _, m in page],
            "text": sorted((round(s, 3), name[k]) for k, s in r.channels.text_top(text, selection, 1000)),
            # Exact cosines: past `exact_first` a graph's own (float16) may stand.
            "vector": sorted((round(h.cosine, 4), name[h.key])
                             for h in r.channels.vector_top(query, selection, 1000,
                                                            exact_first=1000)),
            "admitted": sorted(name[k] for k in r.records.admitted(keys, selection)),
            "expired": sorted((name[k], tier) for k, _, tier in r.lifecycle.expired(selection.now, 1000)),
            "activity": sorted((ns, n) for ns, n, _ in r.lifecycle.namespace_activity()),
            "stats": r.records.statistics(selection.now),
            "members": {e: sorted(name[k] for k in r.graph.entity_members(e))
                        for e in ("alice", "bob", "paris")},
        }  # fmt: skip


@pytest.fixture(scope="module")
def pg_url(pg_server: ThrowawayServer, pg_dsn: str) -> str:
    return pg_server.url(str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]))


def test_both_backends_agree(pg_url: str, tmp_path: Path) -> None:
    BothBackends.pg_url, BothBackends.tmp = pg_url, tmp_path
    case = BothBackends.TestCase
    case.settings = settings(
        max_examples=12, stateful_step_count=15, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )  # fmt: skip
    case().runTest()
