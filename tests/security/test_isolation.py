"""No read path shows a memory outside the namespaces it was asked for (RELIABILITY S6).

The oracle is a plain-Python model of the scope rule of DESIGN.md, written
without the engine's code: a scope is ``None`` (everything), a namespace
(exactly it: ``a/b`` never matches ``a/bc`` nor ``a/b/c``), a subtree
``a/b/*`` (``a/b`` and everything below it, never ``a/bc``), or a list of
those; names compare after NFC normalisation; ``follow_links`` adds, for each
link from an exact namespace in scope, the linked namespace's granted tiers.

Hypothesis builds random worlds (memories in namespaces chosen to sit next
to each other in sort order and in prefix: ``a/b``, ``a/b!``, ``a/b.c``,
``a/b0``, ``a/bc``, ``a/b/c``, NFC and NFD spellings; relations and
supersession, namespace links, fragments, forgotten memories) and, for every
scoped read path (iter, recall in text, vector and hybrid mode, with
``expand_related`` and ``follow_links``, fragment queries) and every drawn
scope, asserts that the engine returns *exactly* the model's memories: a
leak and an under-return both fail. The id-addressed reads (get, get_many,
related, neighbours, lineage) take no scope: they must return exactly the
model's graph with each memory's true namespace, and supersession chains
never leave their namespace; stats, namespace activity and export must count
each namespace exactly. Write-time reads (near-duplicate hints, exact dedup)
and namespace-wide writes are checked on fixed tables.
"""

from __future__ import annotations

import io
import json
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

if TYPE_CHECKING:
    from conftest import Figures

DIMS = 16
NFC_CAFE = unicodedata.normalize("NFC", "café")
NFD_CAFE = unicodedata.normalize("NFD", "café")
# Neighbours of "a/b" in sort order ('!' and '.' sort before '/', '0' right after
# it) and in prefix, so any range or LIKE mistake in a scope shows.
NAMESPACES = [
    "a",
    "a/b",
    "a/b!",
    "a/b.c",
    "a/b0",
    "a/bc",
    "a/bc/d",
    "a/b/c",
    "a/b/c/d",
    "a/B",
    "ab",
    "b",
    NFC_CAFE,
    NFD_CAFE,
    f"{NFD_CAFE}/x",
    "a/b/é",
]
SCOPES: list[Any] = [
    None,
    "a",
    "a/b",
    "a/bc",
    "a/b/c",
    "a/b0",
    "a/b!",
    "ab",
    "a/*",
    "a/b/*",
    "a/bc/*",
    "a/b/c/*",
    "ab/*",
    NFC_CAFE,
    NFD_CAFE,
    f"{NFD_CAFE}/*",
    ["a/b", "a/bc"],
    ["a/b/*", "b"],
    ("a/b/c", "a/B"),
    ["ab", NFD_CAFE, "a/b/*"],
    [NFD_CAFE],
    (NFC_CAFE, "a/b"),
    ["nobody"],
]
LINK_SOURCES = ["a/b", "a/bc", "ab", NFC_CAFE, NFD_CAFE, "a/b/c", "a"]
TIERS = ["semantic", "working", "procedural", "episodic"]
DURABLE = ("semantic", "procedural")
WORDS = ["apple", "river", "stone", "cloud", "ember"]
K_ALL = 1_000


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def model_in_scope(namespace: str, scope: Any) -> bool:
    """DESIGN.md's scope rule, from the text: exact segments, ``/*`` subtrees, lists, NFC."""
    if scope is None:
        return True
    items = [scope] if isinstance(scope, str) else list(scope)
    for item in items:
        item = nfc(item)
        if item.endswith("/*"):
            root = item[:-2]
            if namespace == root or namespace.startswith(root + "/"):
                return True
        elif namespace == item:
            return True
    return False


def model_exact_sources(scope: Any) -> set[str]:
    """The exact (non-subtree) namespaces of a scope: the ones whose links are followed."""
    if scope is None:
        return set()
    items = [scope] if isinstance(scope, str) else list(scope)
    return {nfc(item) for item in items if not item.endswith("/*")}


# -- the model -------------------------------------------------------------------------------


@dataclass
class Mem:
    id: str
    namespace: str  # NFC, as the engine stores it
    tier: str
    content: str
    fragments: bool
    forgotten: bool = False
    superseded_by: str | None = None
    supersedes: str | None = None


@dataclass
class World:
    memories: dict[str, Mem] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # (src, kind, dst)
    links: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    def live(self) -> dict[str, Mem]:
        return {i: m for i, m in self.memories.items() if not m.forgotten}

    def visible(self, scope: Any, follow_links: bool = False) -> set[str]:
        """Live, current memories a scoped read (recall, iter) must return."""
        grants = []
        if follow_links:
            sources = model_exact_sources(scope)
            grants = [(dst, tiers) for (src, dst), tiers in self.links.items() if src in sources]
        return {
            i
            for i, m in self.live().items()
            if m.superseded_by is None
            and (
                model_in_scope(m.namespace, scope)
                or any(m.namespace == dst and m.tier in tiers for dst, tiers in grants)
            )
        }

    def neighbours(self, memory_id: str) -> Counter[tuple[str, str, bool]]:
        """``(other id, kind, outgoing)`` of every edge whose other end is live."""
        found: Counter[tuple[str, str, bool]] = Counter()
        for src, kind, dst in self.edges:
            if src == memory_id and not self.memories[dst].forgotten:
                found[(dst, kind, True)] += 1
            if dst == memory_id and not self.memories[src].forgotten:
                found[(src, kind, False)] += 1
        return found

    def chain(self, memory_id: str) -> set[str]:
        """Every version around ``memory_id``, both ways along supersession."""
        seen = {memory_id}
        frontier = [memory_id]
        while frontier:
            current = self.memories[frontier.pop()]
            for other in (current.supersedes, current.superseded_by):
                if other is not None and other not in seen:
                    seen.add(other)
                    frontier.append(other)
        return seen - {memory_id}


@st.composite
def worlds(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A script of writes: memories, relations, supersession, links, forgets."""
    count = draw(st.integers(min_value=6, max_value=18))
    script: list[dict[str, Any]] = []
    for i in range(count):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
        script.append(
            {
                "op": "remember",
                "id": f"m{i}",
                "namespace": draw(st.sampled_from(NAMESPACES)),
                "tier": draw(st.sampled_from(TIERS)),
                "content": f"shared u{i} " + " ".join(words),
                "relations": draw(st.lists(st.integers(0, i - 1), max_size=2, unique=True))
                if i
                else [],
                "supersede": draw(st.integers(0, 3)) == 0,
                "fragments": draw(st.booleans()),
            }
        )
    for _ in range(draw(st.integers(1, 3))):
        script.append(
            {
                "op": "link",
                # Mostly from namespaces the scopes name exactly, so links are followed often.
                "src": draw(st.sampled_from(LINK_SOURCES)),
                "dst": draw(st.sampled_from(NAMESPACES)),
                "tiers": draw(st.sampled_from([None, ["working"], ["semantic", "episodic"], []])),
            }
        )
    forgets = draw(st.lists(st.integers(0, count - 1), max_size=3, unique=True))
    script += [{"op": "forget", "id": f"m{i}"} for i in forgets]
    return script


def build(script: list[dict[str, Any]]) -> tuple[embedmind.Store, World]:
    """Apply ``script`` to a fresh store and to the model."""
    store = embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS))
    world = World()
    for step in script:
        if step["op"] == "remember":
            namespace = nfc(step["namespace"])
            relations = [("rel", f"m{j}") for j in step["relations"]]
            supersedes = None
            if step["supersede"]:
                # The newest current version in the same namespace (supersession never crosses).
                candidates = [
                    m.id
                    for m in world.memories.values()
                    if m.namespace == namespace and m.superseded_by is None
                ]
                supersedes = candidates[-1] if candidates else None
            store.remember(
                step["content"],
                id=step["id"],
                namespace=step["namespace"],
                tier=step["tier"],
                relations=relations,
                supersedes=[supersedes] if supersedes else [],
            )
            memory = Mem(step["id"], namespace, step["tier"], step["content"], step["fragments"])
            world.memories[memory.id] = memory
            world.edges += [(memory.id, kind, target) for kind, target in relations]
            if supersedes:
                memory.supersedes = supersedes
                world.memories[supersedes].superseded_by = memory.id
                world.edges.append((memory.id, "supersedes", supersedes))
            if step["fragments"]:
                store.fragments.put(memory.id, [((0, 6), "shared"), ((7, 7 + len(memory.id)), "u")])
        elif step["op"] == "link":
            store.link_namespaces(step["src"], step["dst"], tiers=step["tiers"])
            tiers = DURABLE if step["tiers"] is None else tuple(step["tiers"])
            world.links[(nfc(step["src"]), nfc(step["dst"]))] = tiers
        else:
            assert store.forget(step["id"])
            world.memories[step["id"]].forgotten = True
    return store, world


# -- the checks ----------------------------------------------------------------------------------


class Tally:
    """Counts the checks made and the memories that leaked (or went missing)."""

    def __init__(self) -> None:
        self.checks = 0
        self.leaks = 0

    def same(self, got: Any, expected: Any, what: str) -> None:
        self.checks += 1
        if got != expected:
            if isinstance(got, set) and isinstance(expected, set):
                self.leaks += len(got - expected)
            raise AssertionError(f"{what}: got {got!r}, expected {expected!r}")


def check_scoped_reads(
    store: embedmind.Store, world: World, scope: Any, tally: Tally, rng: np.random.Generator
) -> None:
    visible = world.visible(scope)
    label = f"scope {scope!r}"
    tally.same({m.id for m in store.iter(scope)}, visible, f"iter, {label}")
    with_history = {i for i, m in world.live().items() if model_in_scope(m.namespace, scope)}
    tally.same(
        {m.id for m in store.iter(scope, include_superseded=True)},
        with_history,
        f"iter with superseded, {label}",
    )
    for mode in ("text", "vector", "hybrid"):
        got = store.recall("shared", k=K_ALL, namespace=scope, mode=mode)
        tally.same(set(got.ids), visible, f"recall {mode}, {label}")
    if scope is not None:
        linked = world.visible(scope, follow_links=True)
        got = store.recall("shared", k=K_ALL, namespace=scope, mode="text", follow_links=True)
        tally.same(set(got.ids), linked, f"recall following links, {label}")
    # expand_related: the appended neighbours pass the same scope.
    if visible:
        target = sorted(visible)[int(rng.integers(len(visible)))]
        query = world.memories[target].content.split()[1]  # the memory's own token
        for mode in ("text", "hybrid"):
            ranked = store.recall(query, k=1, namespace=scope, mode=mode)
            expanded = store.recall(query, k=1, namespace=scope, mode=mode, expand_related=True)
            hits = set(ranked.ids)
            assert hits <= visible
            extra = set(expanded.ids) - hits
            around = {other for h in hits for other, _, _ in world.neighbours(h)}
            tally.same(extra, (around & visible) - hits, f"expand_related {mode}, {label}")
    fragment_owners = {i for i in visible if world.memories[i].fragments}
    vector = store.embedder.embed_query("shared")  # type: ignore[union-attr]
    hits = store.fragments.query(vector.tolist(), k=K_ALL, namespace=scope)
    tally.same({h.record_id for h in hits}, fragment_owners, f"fragments, {label}")


def check_id_reads(store: embedmind.Store, world: World, tally: Tally) -> None:
    ids = sorted(world.memories)
    got = {m.id: m.namespace for m in store.get_many(ids)}
    tally.same(got, {i: m.namespace for i, m in world.live().items()}, "get_many")
    for memory_id, memory in world.memories.items():
        fetched = store.get(memory_id)
        if memory.forgotten:
            tally.same(fetched, None, f"get {memory_id}")
            with pytest.raises(embedmind.NotFoundError):
                store.related(memory_id)
            continue
        assert fetched is not None
        tally.same(fetched.namespace, memory.namespace, f"get {memory_id}")
        related = store.related(memory_id)
        tally.same(
            Counter((r.memory.id, r.kind, r.outgoing) for r in related),
            world.neighbours(memory_id),
            f"related {memory_id}",
        )
        for r in related:
            tally.same(r.memory.namespace, world.memories[r.memory.id].namespace, "related ns")
        near = {r.memory.id for r in store.neighbors(memory_id, depth=1)}
        tally.same(near, {o for o, _, _ in world.neighbours(memory_id)}, f"neighbors {memory_id}")
        lineage = store.lineage(memory_id)
        versions = [m for m in (*lineage.older, *lineage.newer)]
        tally.same(
            {m.namespace for m in versions} - {memory.namespace},
            set(),
            f"lineage of {memory_id} leaves its namespace",
        )
        assert {m.id for m in versions} <= world.chain(memory_id), memory_id


def check_counts(store: embedmind.Store, world: World, tally: Tally) -> None:
    expected = Counter(m.namespace for m in world.live().values())
    tally.same(store.stats().by_namespace, dict(expected), "stats by namespace")
    tally.same({n.namespace: n.live for n in store.namespaces()}, dict(expected), "namespaces")
    out = io.StringIO()
    store.export_jsonl(out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()[1:]]
    exported = {x["id"]: x["namespace"] for x in lines if x["type"] == "memory"}
    tally.same(exported, {i: m.namespace for i, m in world.live().items()}, "export")


def test_every_read_path_returns_exactly_the_scope(figures: Figures) -> None:
    tally = Tally()
    examples = 0

    @settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        script=worlds(),
        scopes=st.lists(st.sampled_from(SCOPES), min_size=3, max_size=3, unique_by=repr),
        seed=st.integers(0, 2**32 - 1),
    )
    def run(script: list[dict[str, Any]], scopes: list[Any], seed: int) -> None:
        nonlocal examples
        examples += 1
        store, world = build(script)
        try:
            rng = np.random.default_rng(seed)
            for scope in scopes:
                check_scoped_reads(store, world, scope, tally, rng)
            check_id_reads(store, world, tally)
            check_counts(store, world, tally)
        finally:
            store.close()

    try:
        run()
    finally:
        figures(cases=examples, checks=tally.checks, leaks=tally.leaks)


# -- fixed tables ------------------------------------------------------------------------------


def test_the_model_agrees_with_the_design(figures: Figures) -> None:
    # Guards the oracle: the examples DESIGN.md gives, plus the sort-order neighbours.
    assert model_in_scope("a/b", "a/b") and not model_in_scope("a/bc", "a/b")
    assert not model_in_scope("a/b/c", "a/b")
    assert model_in_scope("a/b", "a/b/*") and model_in_scope("a/b/c/d", "a/b/*")
    for outside in ("a/bc", "a/b0", "a/b!", "a/b.c", "a", "ab"):
        assert not model_in_scope(outside, "a/b/*"), outside
    assert model_in_scope(NFC_CAFE, NFD_CAFE)
    assert model_in_scope("x", ["y", "x"]) and not model_in_scope("x", [])
    figures(cases=14, leaks=0)


@pytest.fixture
def neighbours() -> Any:
    """One memory in each namespace around ``a/b``, all saying the same thing."""
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS)) as store:
        for i, namespace in enumerate(NAMESPACES):
            store.remember("the same fact about apples", id=f"n{i}", namespace=namespace)
        yield store


def _ids_in(store: embedmind.Store, namespaces: Sequence[str]) -> set[str]:
    wanted = {nfc(n) for n in namespaces}
    return {m.id for m in store.iter() if m.namespace in wanted}


def test_near_duplicate_hints_stay_in_the_namespace(
    neighbours: embedmind.Store, figures: Figures
) -> None:
    for namespace in ["a/b", "a/bc", "a/b/c", NFD_CAFE, "fresh"]:
        result = neighbours.remember_detailed("the same fact about apples", namespace=namespace)
        same = _ids_in(neighbours, [namespace]) - {result.memory.id}
        assert {s.id for s in result.similar} == same, namespace
    figures(cases=5, leaks=0)


def test_exact_dedup_stays_in_the_namespace(neighbours: embedmind.Store, figures: Figures) -> None:
    for i, namespace in enumerate(NAMESPACES):
        twin = neighbours.remember(
            "The same fact about   APPLES", namespace=namespace, dedup="exact"
        )
        assert twin.id == f"n{NAMESPACES.index(namespace)}" or nfc(namespace) == NFC_CAFE, i
        assert twin.namespace == nfc(namespace)
    assert neighbours.find_by_fingerprint("a/b/x", "semantic", "the same fact about apples") is None
    figures(cases=len(NAMESPACES) + 1, leaks=0)


@pytest.mark.parametrize("namespace", ["a/b", "a/bc", "a/b/c", NFD_CAFE])
def test_namespace_wide_writes_touch_exactly_one_namespace(
    neighbours: embedmind.Store, namespace: str, figures: Figures
) -> None:
    everyone = {m.id: m.namespace for m in neighbours.iter()}
    inside = _ids_in(neighbours, [namespace])
    assert neighbours.rename_namespace(namespace, "moved/here") == len(inside)
    assert _ids_in(neighbours, ["moved/here"]) == inside
    assert {m.id: m.namespace for m in neighbours.iter() if m.id not in inside} == {
        i: n for i, n in everyone.items() if i not in inside
    }
    assert neighbours.delete_namespace("moved/here") == len(inside)
    assert {m.id for m in neighbours.iter()} == set(everyone) - inside
    figures(cases=3, leaks=0)


def test_relations_across_namespaces_never_widen_a_scoped_recall(figures: Figures) -> None:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS)) as store:
        store.remember("secret plans in b", id="secret", namespace="a/bc")
        store.remember("secret notes deeper", id="deeper", namespace="a/b/c")
        store.remember("public plans", id="public", namespace="a/b", relations=[("see", "secret")])
        store.remember("more plans", id="more", namespace="a/b", relations=[("see", "deeper")])
        for mode in ("text", "vector", "hybrid"):
            got = store.recall("plans", namespace="a/b", mode=mode, expand_related=True, k=10)
            assert set(got.ids) == {"public", "more"}, mode
            got = store.recall("plans", namespace="a/b/*", mode=mode, expand_related=True, k=10)
            assert set(got.ids) == {"public", "more", "deeper"}, mode
        # The id-addressed read shows the edge: it carries no scope, the caller filters.
        assert {r.memory.id for r in store.related("public")} == {"secret"}
    figures(cases=7, leaks=0)
