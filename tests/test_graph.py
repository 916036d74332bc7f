"""The graph layer and versioned knowledge, through the public API (the seed's cases)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store() -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as s:
        yield s


def test_remember_then_navigate_by_id_and_by_entity(store: embedmind.Store) -> None:
    a = store.remember("postgres tuning notes", entities=["postgres", "postgres"])
    b = store.remember("auth service uses postgres", entities=["auth-service", "postgres"],
                       relations=[("refines", a.id)])  # fmt: skip
    from_b = store.related(b.id)
    assert [(r.memory.id, r.kind, r.outgoing) for r in from_b] == [(a.id, "refines", True)]
    from_a = store.related(a.id)
    assert [(r.memory.id, r.kind, r.outgoing) for r in from_a] == [(b.id, "refines", False)]
    assert [m.id for m in store.entity_members("postgres")] == [a.id, b.id]
    assert [m.id for m in store.entity_members("auth-service")] == [b.id]
    assert store.entity_members("unknown") == []
    assert store.entities_of(a.id) == ["postgres"]
    stats = store.stats()
    assert (stats.graph_entities, stats.graph_relations) == (2, 1)


def test_relation_to_missing_or_forgotten_target_writes_nothing(store: embedmind.Store) -> None:
    gone = store.remember("to forget")
    store.forget(gone.id)
    for target in ("never-existed", gone.id):
        with pytest.raises(embedmind.NotFoundError):
            store.remember("dangling", relations=[("refines", target)], entities=["e"])
    assert store.stats().live == 0
    assert store.stats().graph_relations == 0
    assert store.stats().graph_entities == 0


def test_forgotten_neighbours_disappear(store: embedmind.Store) -> None:
    a = store.remember("alpha")
    b = store.remember("beta", relations=[("refines", a.id)])
    store.forget(a.id)
    assert store.related(b.id) == []
    with pytest.raises(embedmind.NotFoundError):
        store.related(a.id)


def test_expand_related_appends_one_hop_with_score_zero(store: embedmind.Store) -> None:
    hit = store.remember("zebra crossing rules")
    neighbour = store.remember("pedestrian safety", relations=[("explains", hit.id)])
    far = store.remember("traffic lights", relations=[("next", neighbour.id)])
    plain = store.recall("zebra", k=1, mode="text")
    assert plain.ids == [hit.id]
    expanded = store.recall("zebra", k=1, mode="text", expand_related=True)
    assert expanded.ids == [hit.id, neighbour.id]  # one hop only: not far
    assert expanded[0].score > 0 and expanded[1].score == 0
    assert far.id not in expanded.ids
    filtered = store.recall("zebra", k=1, mode="text", expand_related=True, where={"x": 1})
    assert filtered.ids == []


def test_neighbors_follow_depth_and_kinds(store: embedmind.Store) -> None:
    a = store.remember("a")
    b = store.remember("b", relations=[("next", a.id)])
    c = store.remember("c", relations=[("next", b.id)])
    d = store.remember("d", relations=[("other", c.id)])
    assert [(r.memory.id, r.depth) for r in store.neighbors(a.id)] == [(b.id, 1)]
    assert [(r.memory.id, r.depth) for r in store.neighbors(a.id, depth=3)] == [
        (b.id, 1), (c.id, 2), (d.id, 3),
    ]  # fmt: skip
    assert [r.memory.id for r in store.neighbors(a.id, depth=3, kinds=["next"])] == [b.id, c.id]
    with pytest.raises(embedmind.InvalidInputError):
        store.neighbors(a.id, depth=4)


def test_supersede_hides_the_target_but_get_and_related_keep_it(store: embedmind.Store) -> None:
    a = store.remember("rust fact, first version", now=T0)
    b = store.remember(
        "rust fact, corrected version", supersedes=[a.id], now=T0 + dt.timedelta(days=1)
    )
    for mode in ("hybrid", "text", "vector"):
        ids = store.recall("rust fact", mode=mode).ids
        assert b.id in ids and a.id not in ids, mode
    old = store.get(a.id)
    assert old is not None and old.superseded_by == b.id
    assert old.valid_to == b.valid_from
    assert [(r.memory.id, r.kind, r.outgoing) for r in store.related(b.id)] == [
        (a.id, "supersedes", True)
    ]
    assert [(r.memory.id, r.outgoing) for r in store.related(a.id)] == [(b.id, False)]
    assert a.id not in store.recall("rust fact", expand_related=True).ids


def test_supersede_chain_only_the_head_recalls(store: embedmind.Store) -> None:
    a = store.remember("rust fact v1")
    b = store.remember("rust fact v2", supersedes=[a.id])
    c = store.remember("rust fact v3", supersedes=[b.id])
    assert store.recall("rust fact", mode="text").ids == [c.id]
    assert [m.id for m in store.lineage(c.id).older] == [b.id, a.id]
    middle = store.lineage(b.id)
    assert [m.id for m in middle.older] == [a.id]
    assert [m.id for m in middle.newer] == [c.id]
    assert [m.id for m in store.lineage(a.id).newer] == [b.id, c.id]


def test_supersede_errors_write_nothing(store: embedmind.Store) -> None:
    gone = store.remember("to forget")
    store.forget(gone.id)
    with pytest.raises(embedmind.NotFoundError):
        store.remember("new version", supersedes=["missing"])
    with pytest.raises(embedmind.NotFoundError):
        store.remember("new version", supersedes=[gone.id])
    x = store.remember("scoped fact", namespace="x")
    with pytest.raises(embedmind.InvalidInputError):
        store.remember("wrong namespace", namespace="y", supersedes=[x.id])
    replaced = store.remember("scoped fact v2", namespace="x", supersedes=[x.id])
    with pytest.raises(embedmind.InvalidInputError):  # supersede the head instead
        store.remember("fork", namespace="x", supersedes=[x.id])
    assert store.get(replaced.id).superseded_by is None
    assert store.stats().live == 2
    assert store.stats().graph_relations == 1


def test_forgetting_the_superseder_does_not_resurrect(store: embedmind.Store) -> None:
    a = store.remember("rust fact v1")
    b = store.remember("rust fact v2", supersedes=[a.id])
    store.forget(b.id)
    assert store.recall("rust fact", mode="text").ids == []
    assert store.get(a.id).superseded_by == b.id
    assert store.forget(a.id)


def test_supersede_deduplicates_and_merges(store: embedmind.Store) -> None:
    a = store.remember("fact a")
    b = store.remember("fact b")
    merged = store.remember("merged fact", supersedes=[a.id, b.id, a.id])
    assert {r.memory.id for r in store.related(merged.id)} == {a.id, b.id}
    assert store.stats().graph_relations == 2
    assert {m.id for m in store.lineage(merged.id).older} == {a.id, b.id}


def test_restore_and_contradiction_are_reversible(store: embedmind.Store) -> None:
    a = store.remember("the office is on floor 3", confidence=0.9, now=T0)
    b = store.remember(
        "the office moved to floor 5", supersedes=[a.id], now=T0 + dt.timedelta(days=2)
    )
    store.restore(a.id)
    assert store.get(a.id).superseded_by is None
    assert set(store.recall("office floor", mode="text").ids) == {a.id, b.id}
    later = T0 + dt.timedelta(days=3)
    contradicted = store.mark_contradicted(a.id, by=b.id, confidence=0.1, now=later)
    assert contradicted.valid_to == later and contradicted.confidence == 0.1
    assert store.recall("office floor", mode="text", now=later).ids == [b.id]
    assert store.recall("office floor", mode="text", as_of=T0 + dt.timedelta(days=1)).ids == [a.id]
    restored = store.restore(a.id)
    assert restored.confidence == 0.9 and restored.valid_to is None
    assert store.set_confidence(a.id, 0.5).confidence == 0.5
    with pytest.raises(embedmind.NotFoundError):
        store.restore("missing")


def test_time_travel_returns_what_was_valid(store: embedmind.Store) -> None:
    old = store.remember("alice lives in lisbon", now=T0)
    new = store.remember(
        "alice lives in porto", supersedes=[old.id], now=T0 + dt.timedelta(days=10)
    )
    before = T0 + dt.timedelta(days=5)
    after = T0 + dt.timedelta(days=11)
    assert store.recall("alice lives", mode="text", as_of=before).ids == [old.id]
    assert store.recall("alice lives", mode="text", as_of=after).ids == [new.id]
    assert store.get(old.id, as_of=before) is not None
    assert store.get(old.id, as_of=after) is None
    assert store.get(new.id, as_of=before) is None


def test_knowledge_update_check_200_facts() -> None:
    # 384 hashed dimensions, as many as the default model: at 64 the facts' vectors
    # collide so often that the vector channel ranks the right one about 20th.
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(384)) as store:
        facts = store.remember_many(
            [
                embedmind.Draft(f"person{i} favourite colour is red{i}", created_at=T0)
                for i in range(200)
            ],
            batch_size=200,
        )
        update_at = T0 + dt.timedelta(days=30)
        updates = store.remember_many(
            [
                embedmind.Draft(
                    f"person{i} favourite colour is now blue{i}",
                    supersedes=[f.id],
                    created_at=update_at,
                )
                for i, f in enumerate(facts)
            ],
            batch_size=50,
            now=update_at,
        )
        current = stale = 0
        for i in range(200):
            hits = store.recall(f"person{i} favourite colour", k=3)
            current += hits.ids[0] == updates[i].id
            stale += facts[i].id in hits.ids
            past = store.recall(f"person{i} favourite colour", k=1, as_of=T0 + dt.timedelta(days=1))
            assert past.ids == [facts[i].id]
        assert (current, stale) == (200, 0)


def test_vacuum_preserves_superseded_memories_and_the_chain(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with embedmind.Store.open(tmp_path / "g.mind", embedder=HashingEmbedder(64)) as store:
        a = store.remember("rust fact v1", entities=["rust"])
        b = store.remember("rust fact v2", supersedes=[a.id], entities=["rust"])
        doomed = store.remember("rust doomed", relations=[("about", b.id)], entities=["doom"])
        store.forget(doomed.id)
        report = store.vacuum()
        assert report.removed == 1
        assert store.get(doomed.id) is None
        assert store.get(a.id).superseded_by == b.id
        assert [(r.memory.id, r.kind) for r in store.related(b.id)] == [(a.id, "supersedes")]
        assert store.recall("rust fact").ids == [b.id]
        assert [m.id for m in store.lineage(b.id).older] == [a.id]
        assert store.stats().graph_entities == 1  # "doom" left with its memory


@pytest.mark.parametrize("forgotten", [False, True])
def test_an_upsert_of_a_superseded_version_never_makes_a_second_head(
    store: embedmind.Store, forgotten: bool
) -> None:
    """Writing an old version's id again rewrites that version; its successor stays the head.

    Clearing its supersession would leave two current versions of one memory,
    the fork that superseding it twice is refused for, with no lineage showing
    the second.
    """
    old = store.remember("the office is on floor 2", id="office", now=T0)
    new = store.remember("the office is on floor 5", supersedes=[old.id],
                         now=T0 + dt.timedelta(days=1))  # fmt: skip
    if forgotten:
        store.forget(old.id)
    store.remember("the office was on floor 2 (typo fixed)", id="office",
                   now=T0 + dt.timedelta(days=2))  # fmt: skip
    again = store.get("office")
    assert again is not None
    assert again.content == "the office was on floor 2 (typo fixed)"
    assert again.superseded_by == new.id
    assert (again.valid_from, again.valid_to) == (old.valid_from, new.valid_from)
    assert [m.id for m in store.lineage(new.id).older] == ["office"]
    heads = [h.memory.id for h in store.recall("office floor", k=10, mode="text").hits]
    assert heads == [new.id]


@pytest.mark.parametrize("rewritten", [[], ["Ada Lovelace"]], ids=["no-entities", "new-entities"])
def test_an_upsert_removes_the_entity_names_no_memory_uses_any_more(
    store: embedmind.Store, rewritten: list[str]
) -> None:
    """A name only the rewritten memory carried goes with it, as a delete's does.

    Left in ``entities`` it stayed live for ever (``vacuum`` keeps live rows):
    a user who rewrites a memory to take a person's name out expects it gone.
    Names another memory still carries stay.
    """
    store.remember("Zelda met the team", id="z", entities=["Zelda Quimby", "team"])
    store.remember("the team ships on Friday", id="t", entities=["team"])
    store.remember("Zelda left; the team met", id="z", entities=rewritten)
    assert store.entity_members("Zelda Quimby") == []
    assert store.entities_of("z") == sorted(rewritten)
    assert [m.id for m in store.entity_members("team")] == ["t"]
    assert store.stats().graph_entities == 1 + len(rewritten)  # "team" and the new names
    store.remember("Zelda left; the team met", id="z", entities=rewritten)  # the same again
    assert store.entities_of("z") == sorted(rewritten)
    assert store.stats().graph_entities == 1 + len(rewritten)


def test_vacuum_leaves_no_byte_of_an_entity_name_an_upsert_removed(tmp_path: Path) -> None:
    """The SQLite file (and its WAL) holds no byte of the name once vacuumed."""
    path = tmp_path / "u.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        if store._backend.capabilities.name != "sqlite":
            pytest.skip("PostgreSQL: tests/postgres/test_guarantees.py scans the data directory")
        store.remember_many([f"weather report number {i}" for i in range(50)])
        store.remember("Zelda met the team", id="z", entities=["Zelda Quimby"])
        store.remember("someone met the team", id="z")
        store.vacuum()
        assert store.entity_members("Zelda Quimby") == []
    for name in ("u.mind", "u.mind-wal"):
        file = tmp_path / name
        assert not file.exists() or b"Zelda Quimby" not in file.read_bytes(), name
