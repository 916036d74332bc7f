"""Candidate widening and latest value: the episodic seed's query side."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import embedmind
from embedmind import latest_value
from embedmind.backend.sqlite.lexical.widening import key_terms
from embedmind.cli.render import recall_lines
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.lexical.maxscore import TermList

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def _term(idf: float) -> TermList:
    empty = np.zeros(0, np.float32)
    return TermList(np.zeros(0, np.int64), empty, empty, idf, 0.0)


# -- sub-query generation --------------------------------------------------------------------


@given(st.lists(st.floats(0.01, 20.0), max_size=8), st.integers(0, 5))
def test_key_terms_are_the_rarest_and_leave_the_query_one_term(
    idfs: list[float], limit: int
) -> None:
    chosen = key_terms([_term(idf) for idf in idfs], limit)
    assert len(chosen) == len(set(chosen)) == min(limit, max(len(idfs) - 1, 0))
    rest = [idfs[i] for i in range(len(idfs)) if i not in chosen]
    # Rarest first, and no term left out is rarer than one chosen.
    assert [idfs[i] for i in chosen] == sorted((idfs[i] for i in chosen), reverse=True)
    assert all(idfs[i] >= r for i in chosen for r in rest)


def test_a_one_term_query_has_no_sub_query() -> None:
    assert key_terms([_term(3.0)], 2) == []


# -- the latest-value detector ----------------------------------------------------------------

CUES = ["now", "currently", "current", "latest", "most recent", "these days", "still",
        "nowadays", "at the moment", "anymore", "lately"]  # fmt: skip
PLAIN = ["where", "does", "she", "live", "know", "snow", "recent", "moment", "days", "work",
         "still-life", "job", "what", "is", "her", "the", "stillness", "nowhere"]  # fmt: skip


@pytest.mark.parametrize(
    "query",
    ["Where does she live now?", "What is Melanie's current job?", "Is Bob still married?",
     "What is the most recent book she read?", "What does he do these days?",
     "What's the latest on the house?", "Does she currently paint?"],
)  # fmt: skip
def test_the_detector_finds_questions_about_the_current_value(query: str) -> None:
    assert latest_value.asks_current(query)


@given(st.lists(st.sampled_from([p for p in PLAIN if "-" not in p]), max_size=8))
def test_words_that_only_contain_a_cue_do_not_fire(words: list[str]) -> None:
    # "know", "snow", "nowhere", "stillness", "recent" alone ask for no current value.
    assert not latest_value.asks_current(" ".join(words))


@given(
    st.lists(st.sampled_from([p for p in PLAIN if "-" not in p]), max_size=8),
    st.sampled_from(CUES),
    st.data(),
)
def test_a_cue_anywhere_fires(words: list[str], cue: str, data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(words)))
    text = " ".join([*words[:at], cue.upper() if at % 2 else cue, *words[at:]])
    assert latest_value.asks_current(text + "?")


# -- the cluster reorder ----------------------------------------------------------------------

rankings = st.lists(st.floats(0.0, 1.0), max_size=12).map(
    lambda scores: [(key, s) for key, s in enumerate(sorted(scores, reverse=True))]
)


@given(rankings, st.data())
def test_the_cluster_is_reordered_newest_first_in_place(
    ranking: list[tuple[int, float]], data: st.DataObject
) -> None:
    created = {key: data.draw(st.integers(0, 3)) for key, _ in ranking}
    out, members = latest_value.newest_first(ranking, created)
    positions = latest_value.cluster(ranking)
    assert sorted(out) == sorted(ranking)  # nothing enters or leaves
    for i, item in enumerate(ranking):
        if i not in positions:
            assert out[i] == item  # outside the cluster nothing moves
    inside = [out[i][0] for i in positions]
    if len(positions) >= 2:
        assert inside == members
        # created_at, then write order (key), both newest first.
        assert inside == sorted(inside, key=lambda key: (-created[key], -key))
    else:
        assert members == [] and out == ranking
    # The cluster is the first SPAN positions within BAND of the best.
    assert all(i < latest_value.SPAN for i in positions)
    if ranking and ranking[0][1] > 0:
        top = ranking[0][1]
        expected = [i for i, (_, s) in enumerate(ranking[: latest_value.SPAN]) if s >= 0.5 * top]
        assert positions == expected


# -- through recall ---------------------------------------------------------------------------


@pytest.fixture
def homes() -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(dims=64)) as store:
        store.remember_many(
            [
                embedmind.Draft("Bob lives in Paris; Bob lives well", created_at=T0),
                embedmind.Draft("Bob lives in Rome", created_at=T0 + dt.timedelta(days=300)),
                embedmind.Draft("Alice plays chess", created_at=T0 + dt.timedelta(days=400)),
            ]
        )
        yield store


def test_latest_puts_the_newest_statement_first(homes: embedmind.Store) -> None:
    query = "where does bob live now?"
    plain = homes.recall(query, k=2, mode="text")
    latest = homes.recall(query, k=2, mode="text", latest=True)
    assert plain.hits[0].content == "Bob lives in Paris; Bob lives well"
    assert latest.hits[0].content == "Bob lives in Rome"
    assert set(latest.ids) == set(plain.ids)
    assert "latest" in latest.channels
    assert latest.hits[0].channels["latest"].rank == 1
    assert latest.hits[1].channels["latest"].rank == 2


def test_latest_leaves_a_question_without_a_cue_alone(homes: embedmind.Store) -> None:
    query = "where does bob live?"
    assert homes.recall(query, k=3, latest=True).ids == homes.recall(query, k=3).ids
    assert "latest" not in homes.recall(query, k=3, latest=True).channels


# 30 turns hold the key entity and the query's other words, so they outscore
# the short turn that holds the entity alone; 5 more make the other words
# common enough that "zanzibar" is the query's rarest term.
DECOYS = [f"zanzibar pottery class w{i}" for i in range(30)]
FILLERS = [f"pottery class x{i}" for i in range(5)]


@pytest.fixture
def entity() -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(dims=64)) as store:
        store.remember_many([*DECOYS, *FILLERS, "Zanzibar is lovely"])
        yield store


def test_widening_brings_in_the_turn_with_the_key_term(entity: embedmind.Store) -> None:
    query = "what pottery class in zanzibar"
    # k = 20: one fusion depth, so the primary list holds 20 and the answer is
    # 31st; the vector channel ranks it first (its own vector is the query's).
    vector = HashingEmbedder(dims=64).embed_documents(["Zanzibar is lovely"])[0]
    plain = entity.recall(query, k=20, vector=vector)
    widened = entity.recall(query, k=20, vector=vector, widen=True, explain=True)
    answer = next(h for h in widened if h.content == "Zanzibar is lovely")
    assert answer.channels["text"].via_widening == ("zanzibar",)
    assert answer.channels["text"].rank > 20
    plain_answer = next((h for h in plain if h.content == "Zanzibar is lovely"), None)
    assert plain_answer is None or "text" not in plain_answer.channels
    # Nothing the primary query found is marked as widened.
    assert all(not h.channels["text"].via_widening for h in widened if h is not answer)
    lines = list(recall_lines(widened, explain=True))
    assert sum("via widening: zanzibar" in line for line in lines) == 1


@given(
    st.lists(
        st.lists(st.sampled_from(["bob", "job", "tea", "rex", "zed", "kip"]), min_size=1,
                 max_size=4).map(" ".join),
        min_size=1, max_size=60,
    ),
    st.lists(st.sampled_from(["bob", "job", "tea", "rex", "zed", "kip"]), min_size=2, max_size=4),
    st.sampled_from([None, {"group": "a"}]),
)  # fmt: skip
def test_widened_scores_are_the_primary_querys_scores(
    texts: list[str], words: list[str], where: dict[str, str] | None
) -> None:
    # Oracle: text mode scores every matching memory with the whole query's
    # BM25; a widened candidate must carry exactly that score, pass the filter
    # like any other, and the text-only ranking must not change.
    query = " ".join(words)
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(dims=16)) as store:
        store.remember_many(
            [embedmind.Draft(t, metadata={"group": "ab"[i % 2]}) for i, t in enumerate(texts)]
        )
        exact = {
            h.id: h.channels["text"].raw
            for h in store.recall(query, k=1000, mode="text", where=where)
        }
        widened = store.recall(query, k=1000, mode="hybrid", widen=True, where=where)
        text_only = store.recall(query, k=50, mode="text", where=where, widen=True)
        assert text_only.ids == store.recall(query, k=50, mode="text", where=where).ids
    for hit in widened:
        text = hit.channels.get("text")
        if text is not None:
            assert text.raw == pytest.approx(exact[hit.id], rel=1e-9)
        if where is not None:
            assert hit.memory.metadata["group"] == "a"


def test_widen_and_latest_are_plain_flags(homes: embedmind.Store) -> None:
    # A truthy value is taken as True, like recency and temporal.
    assert (
        homes.recall("bob now", widen=1, latest=1).ids
        == homes.recall(  # type: ignore[arg-type]
            "bob now", widen=True, latest=True
        ).ids
    )


VOCAB = ["bob", "job", "tea", "rex", "zed", "kip", "now", "pot", "art", "sea"]


@st.composite
def query_side_cases(draw: st.DrawFn) -> dict[str, object]:
    texts = draw(
        st.lists(
            st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4).map(" ".join),
            min_size=30,
            max_size=150,
        )
    )
    words = draw(st.lists(st.sampled_from(VOCAB), min_size=2, max_size=4))
    return {
        "texts": texts,
        "query": " ".join([*words, "now"]) if draw(st.booleans()) else " ".join(words),
        "latest": draw(st.booleans()),
        "alpha": draw(st.sampled_from([None, None, 0.5, 2.5])),
        "where": draw(st.sampled_from([None, {"group": "a"}])),
        # One k within the first fusion depth and one past it, so that what
        # widening adds and the latest-value window are both crossed.
        "ks": [draw(st.integers(1, 20)), draw(st.integers(21, 60))],
    }


@given(query_side_cases())
# A store smaller than the deeper depth: its search gave every vector, and
# scoring them exactly then ordered a float16 near-tie unlike the smaller k's.
@example(
    {"texts": ["bob", "bob job tea rex", "bob", "bob", "bob", "job", "bob", "bob", "bob", "bob",
               "job", "bob bob", *["bob"] * 18],
     "query": "bob bob", "latest": False, "alpha": None, "where": None, "ks": [1, 21]}
)  # fmt: skip
def test_widen_and_latest_keep_a_smaller_k_a_prefix(case: dict[str, object]) -> None:
    texts = case["texts"]
    assert isinstance(texts, list)
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(dims=16)) as store:
        store.remember_many(
            [
                # A distinct length per memory, so no two scores tie exactly:
                # a channel cut at depth 20 may pick other members of a tie
                # than the first 20 of its cut at 40 (a limitation of both
                # channels under exact ties, with or without these options).
                embedmind.Draft(" ".join([t, *["pad"] * i]), metadata={"group": "ab"[i % 3 == 0]},
                                created_at=T0 + dt.timedelta(days=i % 5))
                for i, t in enumerate(texts)
            ]
        )  # fmt: skip
        options = {"widen": True, "latest": case["latest"], "where": case["where"],
                   "rerank_alpha": case["alpha"]}  # fmt: skip
        ks = case["ks"]
        assert isinstance(ks, list)
        # "pad" in the query: every memory scores above 0 in both channels, so
        # the vector list has no block of exact zero-cosine ties either.
        query = f"{case['query']} pad"
        answers = [store.recall(query, k=k, **options) for k in [1, *ks]]  # type: ignore[arg-type]
    longest = answers[-1]
    for answer in answers:
        assert answer.ids == longest.ids[: len(answer.ids)]


@given(query_side_cases())
def test_widened_candidates_carry_the_primary_score(case: dict[str, object]) -> None:
    # Oracle, straight on the channel: every candidate widening adds scores
    # exactly what the whole query's exhaustive BM25 gives it, passes the
    # filter, and was not already in the primary list.
    from embedmind.backend.sqlite import records
    from embedmind.backend.sqlite.lexical import channel
    from embedmind.backend.sqlite.lexical.index import query_terms
    from embedmind.backend.sqlite.selection_sql import compile_selection
    from embedmind.lexical import maxscore
    from embedmind.query.selection import Selection
    from embedmind.timestamps import to_micros

    texts = case["texts"]
    assert isinstance(texts, list)
    query, where = str(case["query"]), case["where"]
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember_many(
            [embedmind.Draft(t, metadata={"group": "ab"[i % 3 == 0]}) for i, t in enumerate(texts)]
        )
        admitted = {h.id for h in store.recall(" ".join(VOCAB), k=1000, mode="text", where=where)}  # type: ignore[arg-type]
        condition = compile_selection(
            Selection.of(to_micros(dt.datetime.now(dt.timezone.utc), "now"), where=where)
        )
        lexical = store._lexical
        with store._db.read() as conn:
            found, widened = channel.widened_channel(conn, lexical, query, condition, 20, 20)
            lists, avgdl = lexical.term_lists(conn, query_terms(query))
            keys, scores = maxscore.exhaustive(lists, avgdl)
            memories = records.select_by_keys(conn, keys.tolist())
    exact = dict(zip(keys.tolist(), scores.tolist(), strict=True))
    primary = {key for key, _ in found}
    assert [s for _, s in widened.items] == sorted((s for _, s in widened.items), reverse=True)
    for key, score in widened.items:
        assert score == pytest.approx(exact[key], rel=1e-9)
        assert key not in primary and memories[key].id in admitted
        assert widened.via[key] in query_terms(query)
