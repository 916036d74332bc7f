"""Lifecycle (reinforce, TTL sweep, retier, dedup), namespaces, links and metrics."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

import embedmind
from embedmind import Tier

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 1, 1, tzinfo=UTC)
MIN = dt.timedelta(minutes=1)


class Recorder:
    def __init__(self) -> None:
        self.events: Counter[str] = Counter()
        self.tiers: dict[str, int] = {}

    def upsert(self, op: str, tier: str) -> None:
        self.events[f"upsert:{tier}"] += 1

    def delete(self) -> None:
        self.events["delete"] += 1

    def soft_delete(self) -> None:
        self.events["soft_delete"] += 1

    def sweep_expired(self, tier: str) -> None:
        self.events[f"sweep:{tier}"] += 1

    def dedup_hit(self) -> None:
        self.events["dedup"] += 1

    def active_by_tier(self, tier: str, n: int) -> None:
        self.tiers[tier] = n


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def store(recorder: Recorder) -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:", embedder=None, metrics=recorder) as s:
        yield s


def test_reinforce_bumps_access_and_slides_ttl(store: embedmind.Store) -> None:
    short = store.remember("short lived", tier="working", ttl=10 * MIN, now=T0)
    durable = store.remember("durable")
    n = store.reinforce([short.id, durable.id, "missing"], now=T0 + 5 * MIN, extend_ttl=30 * MIN)
    assert n == 2
    got = store.get(short.id)
    assert got.access_count == 1
    assert got.last_accessed_at == T0 + 5 * MIN
    assert got.expires_at == T0 + 35 * MIN
    assert store.get(durable.id).expires_at is None  # only memories that expire slide
    store.reinforce([short.id], now=T0 + 6 * MIN, extend_ttl=MIN)  # never shortens
    assert store.get(short.id).expires_at == T0 + 35 * MIN


def test_sweep_deletes_only_what_is_still_expired(
    store: embedmind.Store, recorder: Recorder
) -> None:
    a = store.remember("a", tier="working", ttl=MIN, now=T0)
    b = store.remember("b", tier="episodic", ttl=2 * MIN, now=T0)
    c = store.remember("c", ttl=60 * MIN, now=T0)
    store.reinforce([b.id], now=T0 + MIN, extend_ttl=60 * MIN)  # slid before the sweep
    swept = store.sweep_expired(now=T0 + 3 * MIN)
    assert swept == 1
    assert store.get(a.id) is None
    assert store.get(b.id) is not None and store.get(c.id) is not None
    assert recorder.events["sweep:working"] == 1
    assert recorder.tiers == {"episodic": 1, "semantic": 1}


def test_sweep_never_deletes_a_memory_slid_after_listing(store: embedmind.Store) -> None:
    m = store.remember("racing", ttl=MIN, now=T0)
    import embedmind.backend.sqlite.lifecycle_rows as module

    real = module.expired

    def listed_then_reinforced(conn: Any, now: int, limit: int) -> list[tuple[int, str, str]]:
        rows = real(conn, now, limit)
        conn.execute(
            "UPDATE memories SET expires_at = expires_at + 3600000000"
        )  # a reinforce lands
        return rows

    module.expired = listed_then_reinforced  # type: ignore[assignment]
    try:
        assert store.sweep_expired(now=T0 + 2 * MIN) == 0
    finally:
        module.expired = real  # type: ignore[assignment]
    assert store.get(m.id) is not None


def test_retier_changes_tier_and_expiry(store: embedmind.Store) -> None:
    m = store.remember("fact", tier="working", ttl=MIN, now=T0)
    moved = store.retier(m.id, Tier.SEMANTIC, expires_at=None)
    assert moved.tier is Tier.SEMANTIC and moved.expires_at is None
    with pytest.raises(embedmind.NotFoundError):
        store.retier("missing", "semantic")
    with pytest.raises(embedmind.InvalidInputError):
        store.retier(m.id, "eternal")


def test_exact_dedup_returns_the_existing_memory(
    store: embedmind.Store, recorder: Recorder
) -> None:
    first = store.remember("Alice  prefers GREEN tea", namespace="n")
    again = store.remember("alice prefers green tea", namespace="n", dedup="exact")
    assert again.id == first.id
    assert store.stats().live == 1
    assert recorder.events["dedup"] == 1
    elsewhere = store.remember("alice prefers green tea", namespace="other", dedup="exact")
    assert elsewhere.id != first.id
    assert store.find_by_fingerprint("n", "semantic", "ALICE prefers green tea").id == first.id
    assert store.find_by_fingerprint("n", "working", "alice prefers green tea") is None


def test_namespaces_activity_delete_and_move(store: embedmind.Store) -> None:
    store.remember("a1", namespace="a", now=T0)
    a2 = store.remember("a2", namespace="a", now=T0 + MIN)
    store.remember("ab", namespace="a/b")
    store.remember("z", namespace="z")
    activity = {n.namespace: (n.live, n.last_write) for n in store.namespaces()}
    assert activity["a"] == (2, T0 + MIN)
    assert set(activity) == {"a", "a/b", "z"}
    assert store.move([a2.id, "missing"], "a", "z") == 1
    assert store.get(a2.id).namespace == "z"
    assert store.move([a2.id], "a", "q") == 0  # not in "a" any more
    assert store.delete_namespace("a") == 1  # exactly "a", not "a/b"
    assert {n.namespace for n in store.namespaces()} == {"a/b", "z"}


def test_links_grant_reads_of_the_linked_tiers(store: embedmind.Store) -> None:
    store.remember("team fact about deploys", namespace="team", tier="semantic")
    store.remember("team scratch about deploys", namespace="team", tier="working")
    mine = store.remember("my note about deploys", namespace="me")
    assert store.recall("deploys", mode="text", namespace="me").ids == [mine.id]
    link = store.link_namespaces("me", "team", note="shared knowledge")
    assert link.tiers is None
    followed = store.recall("deploys", mode="text", namespace="me", follow_links=True)
    assert len(followed) == 2  # the durable tier only
    store.link_namespaces("me", "team", tiers=["semantic", "working"])
    assert len(store.recall("deploys", mode="text", namespace="me", follow_links=True)) == 3
    assert [(x.src, x.dst) for x in store.links("me")] == [("me", "team")]
    assert store.unlink("me", "team") and not store.unlink("me", "team")
    assert len(store.recall("deploys", mode="text", namespace="me", follow_links=True)) == 1


def test_renaming_a_namespace_never_widens_a_grant(store: embedmind.Store) -> None:
    created = T0
    store.link_namespaces("old", "shared", tiers=["working", "semantic"], created_at=created)
    store.link_namespaces("new", "shared", tiers=["semantic"], created_at=created)
    store.remember("x", namespace="old")
    assert store.rename_namespace("old", "new") == 1
    links = store.links()
    assert [(x.src, x.dst, x.tiers) for x in links] == [("new", "shared", (Tier.SEMANTIC,))]
    assert links[0].created_at == created


def test_metrics_see_writes_forgets_and_deletes(store: embedmind.Store, recorder: Recorder) -> None:
    a = store.remember("a", tier="episodic")
    b = store.remember("b")
    store.forget(a.id)
    store.delete(b.id)
    assert recorder.events == Counter(
        {"upsert:episodic": 1, "upsert:semantic": 1, "soft_delete": 1, "delete": 1}
    )
