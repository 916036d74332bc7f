"""The on-disk compatibility fixture: a store written by embedmind ``33de530``, and its answers.

Three jobs, all through the public API (``embedmind.Store``, ``store.fragments``,
the ``embedmind`` CLI), so the fixture outlives any internal reorganisation:

``write DIR``
    Run under the OLD code (``33de530``): writes ``DIR/store.mind``, a small
    store that exercises the whole data model at a fixed instant :data:`NOW`,
    keeps only the main file (the vector and fragment index files are caches
    the reader rebuilds) and prints its sha256.

``record --as old|current``
    Opens a COPY of the fixture with whatever ``embedmind`` is importable and
    writes what it answers (:func:`answers`) to ``answers_old.json`` or
    ``answers_current.json`` beside it. ``--as old`` must run under the old
    code; ``--as current`` under the code being tested (the regeneration
    helper after an intended change of semantics).

``check``
    Prints which answers differ from each recording (what the test asserts).

How the committed fixture was made (from ``/work/main``)::

    git worktree add /work/old33 33de530
    cd /tmp  # so '' on sys.path is not the new tree
    PYTHONPATH=/work/old33 /work/main/.venv/bin/python \\
        /work/main/scripts/make_format_fixture.py write /work/main/tests/fixtures/format_33de530
    PYTHONPATH=/work/old33 /work/main/.venv/bin/python \\
        /work/main/scripts/make_format_fixture.py record --as old
    /work/main/.venv/bin/python /work/main/scripts/make_format_fixture.py record --as current
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import hashlib
import io
import json
import math
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

UTC = dt.timezone.utc  # dt.UTC is 3.11+; the engine supports 3.10
NOW = dt.datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
"""The instant every write and every read of the fixture is evaluated at."""
BASE = dt.datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
FAR = dt.datetime(2099, 1, 1, tzinfo=UTC)
"""A far-future expiry: live at :data:`NOW` and by the clock the CLI reads at."""
DIMS = 64
FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "format_33de530"
STORE_NAME = "store.mind"
OLD_SCHEMA = 4
"""The schema version ``33de530`` writes (the current code migrates the copy it opens)."""


def at(days: float = 0, hours: float = 0) -> dt.datetime:
    """``BASE`` plus an offset: the fixture's timeline."""
    return BASE + dt.timedelta(days=days, hours=hours)


# -- writing (old code) --------------------------------------------------------


def write(directory: Path) -> Path:
    """Write the fixture store into ``directory``; return the store's path."""
    import embedmind
    from embedmind.embedders.hashing import HashingEmbedder
    from embedmind.policies import FragmentPolicy

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / STORE_NAME
    for old in directory.glob(STORE_NAME + "*"):
        old.unlink()
    policy = FragmentPolicy(chunker="sentences", window=80, namespaces="docs/*")
    store = embedmind.Store.open(path, embedder=HashingEmbedder(DIMS), fragment_policy=policy)
    with store:
        _write_memories(store)
        _write_graph_and_lifecycle(store)
        _write_fragments(store, HashingEmbedder(DIMS))
    # Memories written without a vector (a store with a model opened text-only).
    with embedmind.Store.open(path, embedder=None) as text_only:
        text_only.remember(
            "Alice keeps a paper notebook for grocery lists",
            id="m-novec-notebook", namespace="user/alice", tags=["novec"],
            created_at=at(25), now=NOW, metadata={"topic": "habits"},
        )  # fmt: skip
        text_only.remember(
            "The office plant needs water every Friday",
            id="m-novec-plant", namespace="notes", created_at=at(26), now=NOW,
        )  # fmt: skip
    for sibling in sorted(directory.glob(STORE_NAME + "?*")):
        if sibling.name.endswith(("-wal", "-shm", "-journal")):
            # The last close checkpoints the WAL into the file: data left here is a bug.
            raise SystemExit(f"{sibling} is left after close: the store file is incomplete")
        print(f"dropping the cache {sibling.name}", file=sys.stderr)
        sibling.unlink()  # -vectors, -fragments: derived indexes the reader rebuilds
    return path


def _write_memories(store: Any) -> None:
    """Plain memories: every namespace shape, metadata type, tier, level, TTL and session."""
    import embedmind

    rich = {
        "topic": "drinks", "year": 2021, "rating": 4.5, "vegan": True, "notes": None,
        "labels": ["tea", "morning"], "source": {"kind": "chat", "turn": 3, "ok": False},
        "big": 2**53 + 1, "neg": -7, "tiny": -0.125, "empty_list": [], "empty_obj": {},
        "text": "naïve “quotes” \\ and \n newline", "nested": [[1, 2], {"a": [None, True]}],
    }  # fmt: skip
    drafts = [
        embedmind.Draft(
            "Alice prefers green tea in the morning", id="m-alice-tea", namespace="user/alice",
            metadata=rich, tags=["pref", "drink"], agent="assistant", session_id="s-alice-1",
            created_at=at(0), expires_at=FAR,
        ),
        embedmind.Draft(
            "Alice drinks black coffee after lunch", id="m-alice-coffee", namespace="user/alice",
            metadata={"topic": "drinks", "year": 2022, "rating": 3, "vegan": False,
                      "labels": ["coffee"]},
            tags=["pref", "drink"], agent="assistant", session_id="s-alice-1",
            created_at=at(0, 1), confidence=0.9,
        ),
        embedmind.Draft(
            "Alice's old phone number is 555-0100", id="m-alice-phone", namespace="user/alice",
            metadata={"topic": "contact"}, created_at=at(0, 2),
        ),
        embedmind.Draft(
            "Alice's API key is sk-test-4242-secret", id="m-alice-key", namespace="user/alice",
            metadata={"topic": "credentials"}, tags=["secret"], created_at=at(0, 3),
        ),
        # A dialog: one session, in created_at order (session context's neighbours).
        embedmind.Draft(
            "User: where should we go hiking this weekend?", id="m-dialog-1",
            namespace="user/alice", tier="episodic", agent="user", session_id="s-alice-2",
            created_at=at(3, 10),
        ),
        embedmind.Draft(
            "Assistant: the Lake Trail is 12 km long and passes a waterfall", id="m-dialog-2",
            namespace="user/alice", tier="episodic", agent="assistant", session_id="s-alice-2",
            created_at=at(3, 10.01),
        ),
        embedmind.Draft(
            "User: great, book the cabin near the waterfall for Saturday", id="m-dialog-3",
            namespace="user/alice", tier="episodic", agent="user", session_id="s-alice-2",
            created_at=at(3, 10.02), metadata={"turn": 3},
        ),
        embedmind.Draft(
            "Alice lives in Berlin", id="m-city-1", namespace="user/alice",
            metadata={"topic": "home"}, created_at=at(2),
        ),
        embedmind.Draft(
            "Alice avoids dairy", id="m-diet-a", namespace="user/alice",
            metadata={"topic": "food"}, created_at=at(4),
        ),
        embedmind.Draft(
            "Alice avoids gluten", id="m-diet-b", namespace="user/alice",
            metadata={"topic": "food"}, created_at=at(4, 1),
        ),
        embedmind.Draft(
            "Alice works on the Atlas project with Bob", id="m-work-atlas",
            namespace="user/alice/work", entities=["Atlas", "Bob"], agent="assistant",
            metadata={"topic": "work", "priority": 1}, tags=["project"], created_at=at(5),
        ),
        embedmind.Draft(
            "The Atlas deadline is June 14", id="m-work-deadline", namespace="user/alice/work",
            tier="working", entities=["Atlas"], metadata={"topic": "work", "priority": 2},
            tags=["project", "deadline"], created_at=at(6), expires_at=dt.datetime(2024, 6, 20, tzinfo=UTC),
        ),
        embedmind.Draft(
            "Alice probably enjoys hiking because she books cabins", id="m-deduced-hiking",
            namespace="user/alice", level="deduced", confidence=0.55, created_at=at(7),
            metadata={"topic": "hobby"},
        ),
        embedmind.Draft(
            "Bob is a data engineer who likes cycling", id="m-bob-profile", namespace="user/bob",
            entities=["Bob"], metadata={"topic": "profile", "year": 2020}, created_at=at(1),
            agent="assistant", session_id="s-bob-1",
        ),
        embedmind.Draft(
            "Bob's birthday is on 8 May", id="m-bob-birthday", namespace="user/bob",
            entities=["Bob"], metadata={"topic": "dates"}, created_at=at(7, 3),
        ),
        embedmind.Draft(
            "Bob was on vacation in Portugal", id="m-bob-vacation", namespace="user/bob",
            tier="episodic", created_at=at(0, 5), valid_from=at(0, 5), valid_to=at(14),
            metadata={"topic": "travel"},
        ),
        embedmind.Draft(
            "Bob prefers tea over coffee", id="m-bob-tea", namespace="user/bob",
            metadata={"topic": "drinks", "year": 2019}, created_at=at(1, 2),
        ),
        embedmind.Draft(
            "Bob only drinks coffee, never tea", id="m-bob-coffee", namespace="user/bob",
            metadata={"topic": "drinks", "year": 2024}, created_at=at(9),
        ),
        embedmind.Draft(
            "To reset the router, hold its button for 10 seconds", id="m-proc-router",
            namespace="default", tier="procedural", tags=["howto"], created_at=at(2, 4),
            metadata={"topic": "howto", "steps": 1},
        ),
        embedmind.Draft(
            "Reminder: call the plumber about the kitchen sink", id="m-ttl-expired",
            namespace="default", tier="working", created_at=at(8),
            expires_at=dt.datetime(2024, 5, 20, tzinfo=UTC), tags=["reminder"],
        ),
        embedmind.Draft(
            "Parking spot B12 is reserved for the team", id="m-ttl-far", namespace="default",
            tier="working", created_at=at(8, 2), expires_at=FAR, tags=["reminder"],
        ),
        embedmind.Draft(
            "The WiFi password rotates next week", id="m-ttl-soon", namespace="default",
            tier="working", created_at=at(30), ttl=dt.timedelta(days=10), tags=["reminder"],
        ),
        embedmind.Draft(
            "A memory that will be deleted outright", id="m-deleted", namespace="default",
            created_at=at(8, 5),
        ),
        embedmind.Draft(
            "Das Team trifft sich jeden Dienstag um 10 Uhr im Büro", id="m-uni-de",
            namespace="équipe/研究室", metadata={"ключ": "значение", "emoji": "🍵"},
            tags=["日本語", "büro"], created_at=at(10), session_id="セッション-1",
            agent="ロボット",
        ),
        embedmind.Draft(
            "研究室のミーティングは火曜日の十時です", id="m-uni-ja", namespace="équipe/研究室",
            tags=["日本語"], created_at=at(10, 1), session_id="セッション-1", agent="ロボット",
        ),
        embedmind.Draft(
            "Ñandú café naïve résumé 🍵 — façade coöperation", id="m-uni-mixed",
            namespace="équipe/研究室/sub", metadata={"topic": "ünïcode", "rating": 5},
            created_at=at(10, 2),
        ),
        embedmind.Draft(
            "Moved memory: the team lunch is on Thursdays", id="m-moved", namespace="default",
            created_at=at(11),
        ),
        embedmind.Draft(
            "Scratch note in a namespace that gets renamed", id="m-renamed", namespace="tmp/old",
            created_at=at(11, 1),
        ),
        embedmind.Draft(
            "Promoted note: Alice's manager is Carol", id="m-retiered", namespace="user/alice/work",
            tier="working", created_at=at(12), expires_at=dt.datetime(2024, 5, 25, tzinfo=UTC),
            entities=["Carol"],
        ),
    ]  # fmt: skip
    store.remember_many(drafts, batch_size=7, now=NOW)
    # Given vector (not re-embedded): a unit vector pointing at one bucket.
    store.remember(
        "A memory whose vector the caller computed", id="m-given-vector", namespace="default",
        vector=[1.0] + [0.0] * (DIMS - 1), created_at=at(12, 1), now=NOW,
    )  # fmt: skip
    twin = store.remember(
        "alice  PREFERS green tea in the morning", dedup="exact", namespace="user/alice", now=NOW
    )
    assert twin.id == "m-alice-tea", twin.id  # dedup returned the twin: no new row
    # Supersede chains: Berlin -> Munich -> Vienna, and a merge of two diets.
    store.remember(
        "Alice moved to Munich", id="m-city-2", namespace="user/alice", supersedes=["m-city-1"],
        created_at=at(10), metadata={"topic": "home"}, now=NOW,
    )  # fmt: skip
    store.remember(
        "Alice moved to Vienna", id="m-city-3", namespace="user/alice", supersedes=["m-city-2"],
        created_at=at(20), metadata={"topic": "home"}, relations=[("mentions", "m-bob-profile")],
        now=NOW,
    )  # fmt: skip
    store.remember(
        "Alice avoids dairy and gluten", id="m-diet", namespace="user/alice",
        supersedes=["m-diet-a", "m-diet-b"], created_at=at(5), metadata={"topic": "food"},
        now=NOW,
    )  # fmt: skip
    # An upsert of an existing id (same namespace): content replaced, created_at kept.
    store.remember(
        "Bob is a data engineer who likes cycling and climbing", id="m-bob-profile",
        namespace="user/bob", entities=["Bob"], metadata={"topic": "profile", "year": 2021},
        agent="assistant", session_id="s-bob-1", now=NOW,
    )  # fmt: skip


def _write_graph_and_lifecycle(store: Any) -> None:
    """Relations, contradictions, confidence, reinforcement, moves, links, forget, redact."""
    store.remember(
        "Carol approved the Atlas budget", id="m-work-budget", namespace="user/alice/work",
        entities=["Atlas", "Carol"], created_at=at(13), now=NOW,
        relations=[("about", "m-work-atlas"), ("follows", "m-work-deadline")],
    )  # fmt: skip
    store.remember(
        "Bob reviewed the budget with Carol", id="m-work-review", namespace="user/bob",
        entities=["Bob", "Carol"], created_at=at(13, 2), now=NOW,
        relations=[("about", "m-work-budget")],
    )  # fmt: skip
    store.mark_contradicted("m-bob-tea", by="m-bob-coffee", confidence=0.1, now=at(15))
    store.set_confidence("m-deduced-hiking", 0.65, now=at(15, 1))
    store.reinforce(["m-alice-tea", "m-alice-coffee"], now=at(16))
    store.reinforce(["m-alice-coffee"], now=at(17), extend_ttl=dt.timedelta(days=1))
    store.retier("m-retiered", "semantic", now=at(16, 1))
    assert store.move(["m-moved"], "default", "user/bob", now=at(16, 2)) == 1
    assert store.rename_namespace("tmp/old", "tmp/new", now=at(16, 3)) == 1
    store.link_namespaces(
        "user/alice", "user/bob", tiers=["semantic"], note="family", created_at=at(16, 4)
    )
    store.link_namespaces("équipe/研究室", "default", note="shared ✓", created_at=at(16, 5))
    assert store.forget("m-alice-phone", now=at(18))
    assert store.delete("m-deleted")
    store.redact("m-alice-key", "Alice's API key is [REDACTED]", now=at(19))


def _write_fragments(store: Any, embedder: Any) -> None:
    """Documents chunked by the policy, and explicit fragments with locators."""
    manual = (
        "The Atlas service stores events in a ring buffer. Each event carries a sequence "
        "number and a checksum. Readers poll the buffer every second. When the buffer is "
        "full the oldest events are dropped. Operators can raise the buffer size in the "
        "configuration file."
    )
    store.remember(manual, id="m-doc-atlas", namespace="docs/manual", created_at=at(21), now=NOW)
    store.remember(
        "Backups run nightly at two o'clock. A backup copies the database and its index "
        "files. Restores are tested every month. Keep at least seven backups.",
        id="m-doc-backup", namespace="docs/manual", created_at=at(21, 1), now=NOW,
        metadata={"topic": "ops"},
    )  # fmt: skip
    store.remember(
        "The API accepts JSON requests. Every request needs a token. Tokens expire after "
        "one hour.",
        id="m-doc-api", namespace="docs/api", created_at=at(21, 2), now=NOW,
        metadata={"topic": "api"},
    )  # fmt: skip
    # Explicit fragments (replacing what the policy derived): texts and one given vector.
    text = "Readers poll the buffer every second."
    store.fragments.put(
        "m-work-atlas",
        [
            ((0, 11), "Alice works"),
            ((12, 41), "on the Atlas project with Bob"),
            ((100, 120), embedder.embed_query("custom vector fragment about ring buffers")),
            ((200, 200 + len(text)), text),
        ],
    )
    store.fragments.put("m-alice-coffee", [((0, 12), "Alice drinks"), ((13, 37), "black coffee")])
    store.fragments.put("m-bob-birthday", [((0, 5), "Bob's")])
    store.fragments.remove("m-bob-birthday")  # removed again: no fragments


# -- answering (any code) --------------------------------------------------------


def memory_json(memory: Any) -> dict[str, Any] | None:
    """A memory as JSON, field by field (the fields ``33de530`` has)."""
    if memory is None:
        return None
    return {
        "id": memory.id,
        "namespace": memory.namespace,
        "content": memory.content,
        "metadata": memory.metadata,
        "tags": list(memory.tags),
        "tier": memory.tier.value,
        "level": memory.level.value,
        "agent": memory.agent,
        "session_id": memory.session_id,
        "created_at": _time(memory.created_at),
        "updated_at": _time(memory.updated_at),
        "valid_from": _time(memory.valid_from),
        "valid_to": _time(memory.valid_to),
        "expires_at": _time(memory.expires_at),
        "superseded_by": memory.superseded_by,
        "confidence": memory.confidence,
        "access_count": memory.access_count,
        "last_accessed_at": _time(memory.last_accessed_at),
        "fingerprint": memory.fingerprint,
        "forgotten": memory.forgotten,
    }


def _time(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _num(value: float) -> float:
    # Six decimals keep the JSON readable; the test compares with a tolerance.
    return round(float(value), 6)


def recall_json(store: Any, result: Any) -> dict[str, Any]:
    """A recall result: hits (id, rank, score, channels), mode, channels, degraded."""
    hits = []
    for hit in result.hits:
        same = memory_json(store.get(hit.memory.id)) == memory_json(hit.memory)
        hits.append(
            {
                "id": hit.memory.id,
                "rank": hit.rank,
                "score": _num(hit.score),
                "channels": {
                    name: {"rank": c.rank, "raw": _num(c.raw)}
                    for name, c in sorted(hit.channels.items())
                },
                # The hit's memory must be what get() returns; spelled out only if not.
                "memory": "same as get" if same else memory_json(hit.memory),
            }
        )
    return {
        "hits": hits,
        "mode": result.mode.value,
        "channels": list(result.channels),
        "degraded": list(result.degraded),
    }


ALL_IDS = [
    "m-alice-tea", "m-alice-coffee", "m-alice-phone", "m-alice-key", "m-dialog-1", "m-dialog-2",
    "m-dialog-3", "m-city-1", "m-city-2", "m-city-3", "m-diet-a", "m-diet-b", "m-diet",
    "m-work-atlas", "m-work-deadline", "m-work-budget", "m-work-review", "m-deduced-hiking",
    "m-bob-profile", "m-bob-birthday", "m-bob-vacation", "m-bob-tea", "m-bob-coffee",
    "m-proc-router", "m-ttl-expired", "m-ttl-far", "m-ttl-soon", "m-deleted", "m-uni-de",
    "m-uni-ja", "m-uni-mixed", "m-moved", "m-renamed", "m-retiered", "m-given-vector",
    "m-doc-atlas", "m-doc-backup", "m-doc-api", "m-novec-notebook", "m-novec-plant",
    "m-never-written",
]  # fmt: skip

RECALLS: list[tuple[str, str, dict[str, Any]]] = [
    # (name, query, keyword arguments); every one also gets now=NOW.
    ("tea/text", "what tea does alice like", {"mode": "text"}),
    ("tea/vector", "what tea does alice like", {"mode": "vector"}),
    ("tea/hybrid", "what tea does alice like", {}),
    ("tea/hybrid/k1", "what tea does alice like", {"k": 1}),
    ("tea/hybrid/k3", "what tea does alice like", {"k": 3}),
    ("tea/hybrid/k30", "what tea does alice like", {"k": 30}),
    ("tea/text/k30", "tea coffee drinks", {"mode": "text", "k": 30}),
    ("coffee/vector/k30", "coffee drinks", {"mode": "vector", "k": 30}),
    ("drinks/where-eq", "drinks", {"where": {"topic": "drinks"}, "mode": "text"}),
    ("drinks/where-range", "drinks", {"where": {"year": {"$gte": 2020, "$lt": 2023}}}),
    ("drinks/where-or-not", "alice", {"mode": "text", "where": {
        "$or": [{"vegan": True}, {"$not": {"labels": {"$contains": "coffee"}}}]}}),
    ("drinks/where-exists-null", "alice tea", {"where": {"notes": {"$exists": True}}}),
    ("drinks/where-in-nin", "drinks", {"mode": "vector", "where": {
        "topic": {"$in": ["drinks", "home"]}, "year": {"$nin": [2019]}}}),
    ("drinks/where-match", "alice", {"mode": "text", "where": {"topic": {"$imatch": "DRI"}}}),
    ("drinks/where-any-all", "tea", {"where": {"labels": {"$any": ["tea", "x"]}}}),
    ("drinks/where-empty", "alice", {"mode": "text", "where": {"labels": {"$empty": False}}}),
    ("where-type-error", "drinks", {"where": {"topic": {"$gt": 3}}}),
    ("where-invalid", "drinks", {"where": {"topic": {"$bogus": 1}}}),
    ("ns/exact", "alice", {"namespace": "user/alice", "mode": "text", "k": 30}),
    ("ns/subtree", "alice atlas", {"namespace": "user/alice/*", "k": 30}),
    ("ns/list", "team", {"namespace": ["user/bob", "default"], "k": 20}),
    ("ns/unicode", "Dienstag team", {"namespace": "équipe/研究室", "mode": "text"}),
    ("ns/unicode-nfd", "Dienstag", {"namespace": "e\u0301quipe/研究室/*", "mode": "text"}),
    ("ns/unicode-query", "研究室のミーティング", {"mode": "text"}),
    ("ns/follow-links", "bob coffee tea", {"namespace": "user/alice", "follow_links": True}),
    ("ns/follow-links-unicode", "parking reminder", {
        "namespace": "équipe/研究室", "follow_links": True, "mode": "text"}),
    ("filters/tags", "alice", {"tags": ["pref", "drink"], "mode": "text"}),
    ("filters/tiers", "waterfall hiking cabin", {"tiers": ["episodic"]}),
    ("filters/levels", "hiking", {"levels": ["deduced"], "mode": "text"}),
    ("filters/agent", "alice", {"agent": "assistant", "k": 20}),
    ("filters/session", "waterfall", {"session_id": "s-alice-2", "mode": "text"}),
    ("filters/session-unicode", "Team", {"session_id": "セッション-1", "mode": "text"}),
    ("ttl/live", "reminder plumber parking wifi", {"mode": "text"}),
    ("ttl/include-expired", "reminder plumber parking wifi", {
        "mode": "text", "include_expired": True}),
    ("ttl/later-now", "reminder plumber parking wifi", {
        "mode": "text", "now": dt.datetime(2024, 7, 1, tzinfo=UTC)}),
    ("asof/vacation-during", "vacation portugal", {"as_of": at(5)}),
    ("asof/vacation-after", "vacation portugal", {"as_of": at(20)}),
    ("asof/city-old", "where does alice live berlin munich vienna", {"as_of": at(5)}),
    ("asof/city-mid", "where does alice live berlin munich vienna", {"as_of": at(15)}),
    ("city/now", "where does alice live berlin munich vienna", {}),
    ("recency/text", "alice", {"mode": "text", "recency": True, "k": 10}),
    ("recency/hybrid", "alice", {"recency": True, "k": 10}),
    ("expand-related", "budget", {"mode": "text", "expand_related": True}),
    ("expand-related/hybrid", "atlas project", {"expand_related": True, "k": 3}),
    ("rerank/reorder", "alice tea coffee", {"rerank_alpha": 2.0}),
    ("rerank/ties", "alice tea coffee", {"rerank_alpha": 1.5}),
    ("rerank/blend", "alice tea coffee", {"rerank_alpha": 0.5}),
    ("ef-search", "atlas buffer events", {"mode": "vector", "ef_search": 8}),
    ("given-vector", "ignored for vector", {"mode": "vector", "vector": [1.0] + [0.0] * 63}),
    ("given-vector/hybrid", "caller computed", {"vector": [1.0] + [0.0] * 63}),
    ("novec/text", "notebook grocery plant water", {"mode": "text"}),
    ("novec/hybrid", "notebook grocery plant water", {}),
    ("novec/vector", "notebook grocery plant water", {"mode": "vector"}),
    ("redacted-old-words", "sk-test-4242-secret", {"mode": "text"}),
    ("redacted-new-words", "api key redacted", {"mode": "text"}),
    ("forgotten", "phone number 555-0100", {"mode": "text"}),
    ("docs/text", "backup restore nightly", {"mode": "text"}),
    ("docs/hybrid", "ring buffer events checksum", {"namespace": "docs/*"}),
    ("no-match/text", "zyzzyva quixotic", {"mode": "text"}),
    ("k-invalid", "tea", {"k": 0}),
    ("mode-invalid", "tea", {"mode": "fuzzy"}),
]  # fmt: skip

FRAGMENT_QUERIES: list[tuple[str, str, dict[str, Any]]] = [
    ("buffer", "ring buffer events", {}),
    ("buffer/cap1", "ring buffer events", {"max_per_record": 1}),
    ("buffer/cap2-k3", "ring buffer events readers", {"max_per_record": 2, "k": 3}),
    ("backup/ns", "backup database nightly", {"namespace": "docs/manual", "k": 5}),
    ("api/where", "token request", {"where": {"topic": "api"}}),
    ("alice/ns", "alice coffee atlas", {"namespace": "user/alice/*"}),
    ("all/k50", "the", {"k": 50}),
]


def _error(e: BaseException) -> dict[str, str]:
    return {"error": type(e).__name__}


def _attempt(call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)``, or the public error class it raised."""
    import embedmind

    try:
        return call(*args)
    except embedmind.EmbedmindError as e:
        return _error(e)


def _recalled(store: Any, query: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    return recall_json(store, store.recall(query, **kwargs))


def _ranking(
    store: Any, query: str, mode: str, depth: int, kwargs: dict[str, Any]
) -> list[list[Any]]:
    hits = store.recall(query, mode=mode, k=depth, **kwargs).hits
    # The channel's raw score (BM25, cosine): ``Hit.score`` was it until issue 50
    # made every mode's score a probability.
    raw = [h.channels[mode].raw if mode in h.channels else h.score for h in hits]
    return [[h.memory.id, _num(score)] for h, score in zip(hits, raw, strict=True)]


def _listed(store: Any, kwargs: dict[str, Any]) -> list[str]:
    return [m.id for m in store.iter(**kwargs)]


def answers(path: Path, *, current: bool, cli: bool = True) -> dict[str, Any]:
    """Everything the store at ``path`` answers, as JSON values keyed by question.

    Args:
        path: A copy of the fixture (it is migrated and written to).
        current: Also ask what only the current code can answer (``doctor
            --verify``, ``temporal=True``, the stats fields added since).
        cli: Also ask the CLI (a few opens of the store more).
    """
    import embedmind

    out: dict[str, Any] = {}
    with embedmind.Store.open(path) as store:
        out["open/schema_version"] = store.schema_version
        out["open/embedder"] = store.embedder.model_id if store.embedder is not None else None
        _reads(store, out)
        for name, query, kwargs in RECALLS:
            call = {"now": NOW, **kwargs}
            out[f"recall/{name}"] = _attempt(_recalled, store, query, call)
        for name, query, kwargs in RECALLS:
            if _reconstructible(kwargs):
                out[f"lists/{name}"] = _channel_lists(store, query, kwargs)
        _graph(store, out)
        _fragments(store, out)
        out["stats"] = _stats(store.stats(now=NOW), current)
        out["stats/later"] = _stats(store.stats(now=dt.datetime(2024, 7, 1, tzinfo=UTC)), current)
        out["export"] = _export(store)
        if current:
            out["recall/temporal/birthday"] = recall_json(
                store, store.recall("what happened on 8 May, 2024?", now=NOW, temporal=True)
            )
    if cli:
        out["cli"] = _cli(path, current)
    out["reopen/schema_version"] = _reopened_version(path)
    if current:
        out["session-context-on"] = _session_context_on(path)
    return out


LIST_DEPTHS = (20, 40)
"""The depths each channel's own ranking is recorded at (see :func:`_channel_lists`)."""


def _reconstructible(kwargs: dict[str, Any]) -> bool:
    """Whether a recall is a fusion of its channels' own rankings (no rerank, no expansion)."""
    return not {"rerank_alpha", "expand_related"} & set(kwargs)


def _channel_lists(store: Any, query: str, kwargs: dict[str, Any]) -> Any:
    """Each channel's own ranking of a recall at each of :data:`LIST_DEPTHS`: ``[id, raw]``.

    A single-channel recall at ``k = depth`` is that channel's top ``depth``
    in every version, so these lists let the test rebuild what a change of
    fusion (its depth, its RRF constant) must answer from the old code's
    lists alone.
    """
    base = {"now": NOW, **{k: v for k, v in kwargs.items() if k not in ("mode", "recency", "k")}}
    lists = {}
    for mode in ("text", "vector"):
        for depth in LIST_DEPTHS:
            lists[f"{mode}/{depth}"] = _attempt(_ranking, store, query, mode, depth, base)
    return lists


def _reads(store: Any, out: dict[str, Any]) -> None:
    for memory_id in ALL_IDS:
        out[f"get/{memory_id}"] = memory_json(store.get(memory_id))
    for when in (at(1), at(5), at(15), at(25)):
        out[f"get-as-of/{when.date()}"] = {
            i: memory_json(store.get(i, as_of=when))
            for i in ("m-city-1", "m-city-2", "m-city-3", "m-bob-vacation", "m-bob-tea")
        }
    out["get_many"] = [memory_json(m) for m in store.get_many(ALL_IDS)]
    out["vectors"] = {
        i: hashlib.sha256(v.astype("<f4").tobytes()).hexdigest()[:16]
        for i, v in sorted(store.vectors(ALL_IDS).items())
    }
    iterations: dict[str, dict[str, Any]] = {
        "all": {},
        "expired": {"include_expired": True},
        "superseded": {"include_superseded": True},
        "forgotten": {"include_forgotten": True},
        "everything": {
            "include_expired": True, "include_superseded": True, "include_forgotten": True
        },
        "subtree": {"namespace": "user/alice/*"},
        "unicode": {"namespace": "équipe/研究室/*"},
        "where": {"where": {"topic": {"$in": ["drinks", "food"]}}, "include_superseded": True},
        "agent-session": {"agent": "user", "session_id": "s-alice-2"},
        "tags-tiers": {"tags": ["reminder"], "tiers": ["working"], "include_expired": True},
        "levels": {"levels": ["deduced"]},
        "later": {"now": dt.datetime(2024, 7, 1, tzinfo=UTC)},
        "type-error": {"where": {"topic": {"$gt": 3}}},
    }  # fmt: skip
    for name, kwargs in iterations.items():
        call = {"now": NOW, **kwargs}
        out[f"iter/{name}"] = _attempt(_listed, store, call)
    out["iter/all/full"] = [memory_json(m) for m in store.iter(now=NOW, include_forgotten=True)]
    out["find_by_fingerprint"] = {
        text: getattr(store.find_by_fingerprint(ns, tier, text, now=NOW), "id", None)
        for ns, tier, text in [
            ("user/alice", "semantic", "ALICE prefers   green tea in the morning"),
            ("user/alice", "semantic", "Alice lives in Berlin"),  # superseded: no
            ("user/alice", "episodic", "Alice prefers green tea in the morning"),  # tier: no
            ("équipe/研究室", "semantic", "研究室のミーティングは火曜日の十時です"),
        ]
    }
    out["namespaces"] = [
        {"namespace": a.namespace, "live": a.live, "last_write": _time(a.last_write)}
        for a in store.namespaces()
    ]
    out["links"] = [_link(link) for link in store.links()]
    out["links/alice"] = [_link(link) for link in store.links("user/alice")]


def _link(link: Any) -> dict[str, Any]:
    tiers = None if link.tiers is None else [t.value for t in link.tiers]
    return {
        "src": link.src, "dst": link.dst, "tiers": tiers, "note": link.note,
        "created_at": _time(link.created_at),
    }  # fmt: skip


def _related(items: list[Any]) -> list[dict[str, Any]]:
    return [
        {"id": r.memory.id, "kind": r.kind, "outgoing": r.outgoing, "depth": r.depth} for r in items
    ]


def _graph(store: Any, out: dict[str, Any]) -> None:
    for memory_id in ("m-work-atlas", "m-work-budget", "m-city-3", "m-city-1", "m-diet"):
        out[f"related/{memory_id}"] = _related(store.related(memory_id))
    for depth in (1, 2, 3):
        out[f"neighbors/m-work-review/{depth}"] = _related(
            store.neighbors("m-work-review", depth=depth)
        )
    out["neighbors/kinds"] = _related(store.neighbors("m-work-budget", depth=3, kinds=["about"]))
    out["neighbors/supersedes"] = _related(
        store.neighbors("m-city-3", depth=3, kinds=["supersedes"])
    )
    out["related/forgotten"] = _attempt(lambda: _related(store.related("m-alice-phone")))
    out["related/missing"] = _attempt(lambda: _related(store.related("m-never-written")))
    for name in ("Atlas", "Bob", "Carol", "Nobody"):
        out[f"entity_members/{name}"] = [m.id for m in store.entity_members(name)]
    for memory_id in ("m-work-atlas", "m-work-review", "m-uni-de"):
        out[f"entities_of/{memory_id}"] = store.entities_of(memory_id)
    for memory_id in ("m-city-1", "m-city-2", "m-city-3", "m-diet", "m-diet-a", "m-alice-tea"):
        lineage = store.lineage(memory_id)
        out[f"lineage/{memory_id}"] = {
            "older": [m.id for m in lineage.older],
            "newer": [m.id for m in lineage.newer],
        }


def _fragments(store: Any, out: dict[str, Any]) -> None:
    for name, query, kwargs in FRAGMENT_QUERIES:
        hits = [
            {
                "record_id": h.record_id,
                "locator": [h.locator.start, h.locator.end],
                "score": _num(h.score),
                "text": h.text,
            }
            for h in store.fragments.query(query, now=NOW, **kwargs)
        ]
        # Equal cosines keep the HNSW graph's order, which its threaded build does
        # not fix from run to run (two fragments here hold the same sentence):
        # such ties are listed by record and locator, any other order is kept.
        out[f"fragments/{name}"] = sorted(
            hits, key=lambda h: (-h["score"], h["record_id"], h["locator"])
        )


STABLE_STATS = (
    "live", "forgotten", "expired", "superseded", "by_namespace", "by_tier", "lexical_documents",
    "lexical_terms", "vectors", "graph_entities", "graph_relations", "embedder", "schema_version",
)  # fmt: skip
"""The :class:`Stats` fields of ``33de530`` a reader can compare (``file_bytes`` is not one)."""


def _stats(stats: Any, current: bool) -> dict[str, Any]:
    out = {name: _plain(getattr(stats, name)) for name in STABLE_STATS}
    out["by_agent"] = {
        agent: {"live": a.live, "sessions": list(a.sessions)}
        for agent, a in sorted(stats.by_agent.items())
    }
    if current:
        out["missing_vectors"] = stats.missing_vectors
        out["session_context"] = stats.session_context
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return dict(sorted(value.items()))
    return value


def _export(store: Any) -> list[dict[str, Any]]:
    sink = io.StringIO()
    count = store.export_jsonl(sink, include_vectors=True)
    lines = [json.loads(line) for line in sink.getvalue().splitlines()]
    assert count == sum(1 for line in lines if line["type"] == "memory")
    for line in lines:
        for vector in line.get("vectors", ()):
            blob = base64.b64decode(vector.pop("f32le"))
            vector["sha256"] = hashlib.sha256(blob).hexdigest()[:16]
    return lines


@contextlib.contextmanager
def _captured() -> Iterator[io.StringIO]:
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
        yield sink


def _cli(path: Path, current: bool) -> dict[str, Any]:
    """The CLI's answers (in process: the same ``main`` the console script runs)."""
    from embedmind.cli import main

    def run(*argv: str) -> Any:
        errors = io.StringIO()
        with _captured() as sink, contextlib.redirect_stderr(errors):
            code = main(["--store", str(path), "--json", *argv])
        text = sink.getvalue()
        try:
            return {"exit": code, "json": json.loads(text), "stderr": errors.getvalue()}
        except ValueError:
            return {"exit": code, "stdout": text, "stderr": errors.getvalue()}

    out = {
        "get": run("get", "m-uni-de"),
        "get-missing": run("get", "m-never-written"),
        "recall-text": run("recall", "--mode", "text", "-k", "5", "alice tea coffee"),
        "recall-hybrid": run("recall", "-k", "5", "--namespace", "user/alice/*", "alice atlas"),
        "recall-where": run(
            "recall", "--mode", "vector", "--where", '{"topic": "drinks"}', "coffee"
        ),
        "stats": _cli_stats(run("stats")),
    }
    with tempfile.TemporaryDirectory() as tmp, _captured():
        target = Path(tmp) / "export.jsonl"
        out["export-exit"] = main(["--store", str(path), "export", str(target)])
        out["export"] = [json.loads(line) for line in target.read_text("utf-8").splitlines()]
    return out


def _cli_stats(answer: dict[str, Any]) -> dict[str, Any]:
    stats = answer.get("json", {})
    # File sizes are not answers; the rest of the JSON is.
    kept = {k: v for k, v in stats.items() if "bytes" not in k}
    return {"exit": answer["exit"], "json": kept, "stderr": answer["stderr"]}


def doctor_verdict(fixture_store: Path) -> dict[str, Any]:
    """``embedmind doctor --verify --json`` on a fresh copy: the store scan's verdict.

    Its own function (and test): the doctor's environment report loads the
    default model and imports the adapters' frameworks, seconds of work that
    say nothing about the file; only the ``verify`` part and ``error`` are kept.
    """
    from embedmind.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / STORE_NAME
        shutil.copyfile(fixture_store, copy)
        with _captured() as sink:
            main(["--store", str(copy), "--json", "doctor", "--verify"])
    report: dict[str, Any] = json.loads(sink.getvalue())
    verdict: dict[str, Any] = _strip_volatile(
        {k: v for k, v in report.items() if k in ("verify", "error")}
    )
    return verdict


def _strip_volatile(value: Any) -> Any:
    """Drop machine-specific parts (paths, sizes, timings, versions) of a report."""
    volatile = ("path", "bytes", "seconds", "ms", "version", "elapsed")
    if isinstance(value, dict):
        return {
            k: _strip_volatile(v)
            for k, v in value.items()
            if not any(word in k for word in volatile)
        }
    if isinstance(value, list):
        return [_strip_volatile(v) for v in value]
    return value


def _reopened_version(path: Path) -> int:
    import embedmind

    with embedmind.Store.open(path) as store:
        return int(store.schema_version)


def _session_context_on(path: Path) -> dict[str, Any]:
    """Turning session context on in the migrated copy: it re-indexes and the dialog answers."""
    import embedmind

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / STORE_NAME
        shutil.copyfile(path, copy)
        with embedmind.Store.open(copy, session_context=True) as store:
            return {
                "stats": _stats(store.stats(now=NOW), True),
                "recall": recall_json(
                    store,
                    store.recall("where should we go hiking?", mode="text", k=3, now=NOW),
                ),
            }


# -- comparing ---------------------------------------------------------------------


def differences(got: Any, want: Any, where: str = "") -> list[str]:
    """Where two answers differ (floats within 2e-3 or 1e-4 relative count as equal).

    The tolerance covers float32/float16 rounding of BM25 and cosine scores
    across CPUs; any real change of a score or of an order is far larger.
    """
    if isinstance(want, float) or isinstance(got, float):
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (got, want))
        if numbers and math.isclose(got, want, rel_tol=1e-4, abs_tol=2e-3):
            return []
        return [f"{where}: {got!r} != {want!r}"]
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for key in sorted(set(want) | set(got), key=str):
            if key not in got:
                out.append(f"{where}/{key}: missing")
            elif key not in want:
                out.append(f"{where}/{key}: unexpected")
            else:
                out += differences(got[key], want[key], f"{where}/{key}")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{where}: {len(got)} items != {len(want)}: {got!r} != {want!r}"]
        return [d for i, (g, w) in enumerate(zip(got, want, strict=True)) for d in
                differences(g, w, f"{where}[{i}]")]  # fmt: skip
    if type(got) is not type(want) or got != want:
        return [f"{where}: {got!r} != {want!r}"]
    return []


def record(kind: str, fixture: Path = FIXTURE) -> Path:
    """Write ``answers_<kind>.json`` from a copy of the fixture, with the importable code."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / STORE_NAME
        shutil.copyfile(fixture / STORE_NAME, copy)
        found = answers(copy, current=kind == "current")
    if kind == "current":
        found["doctor-verify"] = doctor_verdict(fixture / STORE_NAME)
    if kind == "old" and found["open/schema_version"] != OLD_SCHEMA:
        raise SystemExit(f"--as old must run under 33de530 (schema {found['open/schema_version']})")
    target = fixture / f"answers_{kind}.json"
    target.write_text(json.dumps(found, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    return target


def sha256(path: Path) -> str:
    """The hex sha256 of a file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    """Run the ``write``, ``record`` or ``check`` command."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    writer = commands.add_parser("write", help="write the store (under the old code)")
    writer.add_argument("directory", type=Path)
    recorder = commands.add_parser("record", help="record answers_<as>.json")
    recorder.add_argument("--as", dest="kind", choices=("old", "current"), required=True)
    commands.add_parser("check", help="list the answers that differ from each recording")
    args = parser.parse_args(argv)
    if args.command == "write":
        path = write(args.directory)
        print(f"{path}  sha256 {sha256(path)}  {path.stat().st_size} bytes")
    elif args.command == "record":
        print(record(args.kind))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / STORE_NAME
            shutil.copyfile(FIXTURE / STORE_NAME, copy)
            found = answers(copy, current=True)
        found["doctor-verify"] = doctor_verdict(FIXTURE / STORE_NAME)
        for kind in ("old", "current"):
            want = json.loads((FIXTURE / f"answers_{kind}.json").read_text("utf-8"))
            changed = sorted(
                key for key in set(found) | set(want)
                if differences(found.get(key), want.get(key))
            )  # fmt: skip
            print(f"{kind}: {len(changed)} answers differ: {changed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["NOW", "answers", "differences", "doctor_verdict", "main", "record", "write"]
