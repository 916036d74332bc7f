"""The store's alias table: postings equal a rebuild, recall equals texts enriched by hand.

The postings are read from the lexical tables with the helpers of
``test_session_context`` (the store has no introspection method for them).
"""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_session_context import apply, rebuilt, snapshot
from test_session_context import op as memory_op

import embedmind
from embedmind.backend.sqlite import alias_rows
from embedmind.errors import InvalidInputError
from embedmind.lexical import aliases as lexical_aliases
from embedmind.lexical.analyzer import analyze

# Keys and targets over the memory vocabulary of test_session_context (so keys
# occur in the texts), multi-word ones included, and targets that are keys.
ALIASES = {
    "dog": "hound pet",
    "cello recital": "concert",
    "lisbon": "portugal",
    "vet": "animal doctor",
    "hike": "walk dog",
    "bees": "honey",
    "job bees": "beekeeping work",
}
alias_op = st.one_of(
    st.tuples(
        st.just("set"),
        st.dictionaries(st.sampled_from(sorted(ALIASES)), st.just(""), max_size=3),
        st.booleans(),
        st.sampled_from(["", " again", " pet"]),
    ),
    st.tuples(st.just("remove"), st.lists(st.sampled_from(sorted(ALIASES)), max_size=3)),
)


def apply_alias(store: embedmind.Store, step: tuple[Any, ...]) -> None:
    if step[0] == "set":
        _, keys, replace, suffix = step
        store.set_aliases({k: ALIASES[k] + suffix for k in keys}, replace=replace)
    else:
        store.remove_aliases(step[1])


@given(st.lists(st.one_of(memory_op, alias_op, alias_op), min_size=4, max_size=25))
def test_incremental_postings_equal_a_rebuild_with_the_final_table(
    steps: list[tuple[Any, ...]],
) -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:  # session context on
        made: dict[str, str] = {}
        for step in steps:
            if step[0] in ("set", "remove"):
                apply_alias(store, step)
            else:
                apply(store, step, made)
            kept, fresh = rebuilt(store)
            assert kept == fresh, step
            with store._db.read() as conn:
                assert alias_rows.pending_count(conn) == 0


def test_an_emptied_table_indexes_exactly_as_a_store_that_never_had_one() -> None:
    texts = ["my dog hates the vet", "a cello recital in lisbon", "bees", "hike with the dog"]
    with (
        embedmind.Store.open(":memory:", embedder=None) as plain,
        embedmind.Store.open(":memory:", embedder=None) as emptied,
    ):
        emptied.set_aliases(ALIASES)
        for i, text in enumerate(texts):
            for store in (plain, emptied):
                store.remember(text, id=f"m{i}", session_id="s" if i < 3 else None)
        assert emptied.remove_aliases(list(ALIASES)) == len(ALIASES)
        with plain._db.read() as a, emptied._db.read() as b:
            assert snapshot(a) == snapshot(b)
        for query in ("dog", "hound", "portugal cello", "bees honey"):
            left = plain.recall(query, mode="text", k=10)
            right = emptied.recall(query, mode="text", k=10)
            assert [(h.id, h.score) for h in left] == [(h.id, h.score) for h in right]


# Words the analyzer leaves as they are, so a by-hand query of analysed terms
# analyses to the same terms.
PLAIN = ["pond", "river", "stone", "lamp", "cloud", "york", "new", "bob", "robert", "lake"]
TABLE = {"bob": "robert", "new york": "lake", "river": "stone lamp", "cloud": "pond"}


AT = dt.datetime(2023, 5, 7, 12, 0, tzinfo=dt.timezone.utc)
"""When every memory of the by-hand comparison is written: its date words are "7 May 2023"."""


def by_hand(text: str) -> str:
    """The text a user would write to index ``text`` as the alias table does, without one.

    A memory with expansions is its own words twice (weight 2) and the targets
    of the keys it holds once (weight 1); one without is unchanged. Its own
    words include its date words (written at :data:`AT`), which no key matches.
    """
    table = lexical_aliases.Table.compile(TABLE.items())
    found = table.matches(analyze(text))
    text = f"{text} 7 May 2023"
    if not found:
        return text
    return " ".join([text, text, *(" ".join(table.targets[key]) for key in found)])


def raw_scores(store: embedmind.Store, query: str) -> dict[str, float]:
    if not analyze(query):
        return {}
    return {h.id: h.channels["text"].raw for h in store.recall(query, mode="text", k=100)}


@given(
    st.lists(st.lists(st.sampled_from(PLAIN), min_size=1, max_size=6), min_size=1, max_size=12),
    st.lists(st.sampled_from(PLAIN), min_size=1, max_size=4),
)
@settings(max_examples=60, deadline=None)
def test_recall_equals_recall_over_texts_enriched_by_hand(
    docs: list[list[str]], query_words: list[str]
) -> None:
    assert all(analyze(w) == [w] for w in PLAIN)
    with (
        embedmind.Store.open(":memory:", embedder=None) as aliased,
        embedmind.Store.open(":memory:", embedder=None, date_words=False) as enriched,
    ):
        aliased.set_aliases(TABLE)
        texts = [" ".join(words) for words in docs]
        aliased.remember_many(
            [embedmind.Draft(t, id=f"d{i}", created_at=AT) for i, t in enumerate(texts)]
        )
        enriched.remember_many(
            [embedmind.Draft(by_hand(t), id=f"d{i}") for i, t in enumerate(texts)]
        )
        query = " ".join(query_words)
        # The query side: own terms at weight 1, the expansions it lacks at 0.5;
        # BM25 adds up over terms, so the enriched store scores the two parts.
        table = lexical_aliases.Table.compile(TABLE.items())
        own = list(dict.fromkeys(query_words))
        extra = [t for t in dict.fromkeys(table.expansions(own)) if t not in own]
        expected = raw_scores(enriched, " ".join(own))
        for doc, score in raw_scores(enriched, " ".join(extra)).items():
            expected[doc] = expected.get(doc, 0.0) + lexical_aliases.QUERY_WEIGHT * score
        got = raw_scores(aliased, query)
        assert got.keys() == expected.keys()
        for doc, score in expected.items():
            assert got[doc] == pytest.approx(score, rel=1e-5, abs=1e-6), doc
        if not extra:  # no expansion on the query side: the very same ranking
            ranked = [h.id for h in aliased.recall(query, mode="text", k=100)]
            assert ranked == [h.id for h in enriched.recall(query, mode="text", k=100)]


def test_both_directions_match_and_the_writer_s_word_ranks_first() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.set_aliases({"NYC": "New York", "Bob": "Robert"})
        said_key = store.remember("I moved to NYC in May", id="key").id
        said_target = store.remember("New York is expensive", id="target").id
        store.remember("Robert called", id="robert")
        assert [h.id for h in store.recall("nyc", mode="text")] == [said_key, said_target]
        assert [h.id for h in store.recall("new york", mode="text")] == [said_target, said_key]
        assert [h.id for h in store.recall("where is bob's brother?", mode="text")] == ["robert"]
        assert store.aliases() == {"Bob": "Robert", "NYC": "New York"}


def test_keys_match_after_analysis_greedily_and_one_step_only() -> None:
    table = lexical_aliases.Table.compile(
        {"New York": "big apple", "york": "minster", "NY": "New York", "big apple": "nyc"}.items()
    )
    assert table.matches(analyze("NEW-YORK, then York")) == [("new", "york"), ("york",)]
    # Targets are not expanded again: "ny" gives "new york", never "big apple".
    assert table.expansions(analyze("NY")) == {"new": 1, "york": 1}
    assert table.matches(analyze("Ｎｅｗ the York")) == [("new", "york")]  # NFKC, stop word


BAD: list[tuple[object, str]] = [
    ("nyc", "a mapping"),
    ({"nyc": 3}, "expected a string target"),
    ({5: "x"}, "expected a string key"),
    ({"the": "x"}, "no index terms"),
    ({"nyc": "of the"}, "no index terms"),
    ({"nyc": "NYC"}, "the key itself"),
    ({"NYC": "new york", "nyc": "city"}, "the same key"),
    ({"k1 k2 k3 k4 k5": "x"}, "at most 4"),
    ({"nyc": " ".join(f"w{i}" for i in range(9))}, "at most 8"),
    ({"nyc": "x" * 201}, "longer than 200"),
    ({"ny\x00c": "city"}, "NUL"),
    ({"ok": "fine", "nyc": "\ud800"}, "surrogate"),
]


@pytest.mark.parametrize(("bad", "says"), BAD)
def test_bad_aliases_raise_a_typed_error_and_write_nothing(
    tmp_path: Path, bad: object, says: str
) -> None:
    with embedmind.Store.open(tmp_path / "b.mind", embedder=None) as store:
        store.set_aliases({"bob": "robert"})
        store.remember("bob and the nyc trip")
        with store._db.read() as conn:
            before = (snapshot(conn), alias_rows.version(conn), store.aliases())
        with pytest.raises(InvalidInputError, match=says):
            store.set_aliases(bad)  # type: ignore[arg-type]
        with store._db.read() as conn:
            assert (snapshot(conn), alias_rows.version(conn), store.aliases()) == before


def test_bad_removals_raise_a_typed_error_and_write_nothing() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.set_aliases({"bob": "robert"})
        with pytest.raises(InvalidInputError, match=r"remove_aliases\(\['nyc'\]\)"):
            store.remove_aliases("bob")
        with pytest.raises(InvalidInputError, match="no index terms"):
            store.remove_aliases(["bob", "the"])
        assert store.aliases() == {"bob": "robert"}
        assert store.remove_aliases(["BOB", "unknown"]) == 1
        assert store.aliases() == {}


def test_the_table_size_is_capped_and_the_cap_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("embedmind.aliases.MAX_ALIASES", 3)
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.set_aliases({"a1": "x", "a2": "x"})
        with pytest.raises(InvalidInputError, match="more than 3"):
            store.set_aliases({"a3": "x", "a4": "x"})
        assert store.aliases() == {"a1": "x", "a2": "x"}
        store.set_aliases({"a3": "x", "a4": "x", "a5": "x"}, replace=True)  # replaces: fits
        assert list(store.aliases()) == ["a3", "a4", "a5"]


def test_a_redacted_word_leaves_no_byte_through_an_alias_expansion(tmp_path: Path) -> None:
    # The table itself is configuration and stays: its strings are written in
    # capitals, so the lowercase terms the analyzer derives can only come from
    # postings built from the memory's text.
    path = tmp_path / "r.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        store.set_aliases({"ZQVEXCODE": "PLUMBUSWORD"})
        turns = ["what is the code?", "it is zqvexcode", "thanks"]
        written = store.remember_many([embedmind.Draft(t, session_id="s") for t in turns])
        assert len(store.recall("zqvexcode", mode="text")) == 3  # its words, as context
        assert len(store.recall("plumbusword", mode="text")) == 1  # its alias field
        store.redact(written[1].id, "[redacted]")
        assert store.recall("plumbusword", mode="text").ids == []
        kept, fresh = rebuilt(store)
        assert kept == fresh
    for word in ("zqvexcode", "plumbusword"):
        term = analyze(word)[0].encode()
        leaks = {p.name: p.read_bytes().count(term) for p in tmp_path.iterdir() if p.is_file()}
        assert not any(leaks.values()), (word, leaks)


def test_aliases_travel_with_an_export() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as source:
        source.set_aliases({"NYC": "new york", "bob": "robert"})
        source.remember("bob moved to NYC", session_id="s")
        source.remember("a nice flat there", session_id="s")
        out = io.StringIO()
        source.export_jsonl(out)
    with embedmind.Store.open(":memory:", embedder=None) as target:
        target.set_aliases({"bob": "bobby", "cal": "california"})
        target.import_jsonl(io.StringIO(out.getvalue()))
        assert target.aliases() == {"bob": "robert", "cal": "california", "NYC": "new york"}
        assert target.recall("robert in york", mode="text")[0].content == "bob moved to NYC"
        kept, fresh = rebuilt(target)
        assert kept == fresh


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"type": "alias", "key": "the", "target": "x"}', "line 2: aliases"),
        ('{"type": "alias", "key": "bob"}', "line 2: target: missing"),
        ('{"type": "alias", "key": "bob", "target": "r", "note": 1}', "line 2: note"),
    ],
)
def test_an_import_with_a_bad_alias_line_writes_nothing(line: str, says: str) -> None:
    header = '{"type":"header","format":"embedmind-jsonl","version":1,"embedder":null}'
    memory = (
        '{"type":"memory","id":"m1","namespace":"default","content":"bob","tier":"semantic",'
        '"level":"explicit","created_at":1,"updated_at":1,"valid_from":1,"confidence":1.0}'
    )
    with embedmind.Store.open(":memory:", embedder=None) as store:
        with pytest.raises(InvalidInputError, match=says):
            store.import_jsonl(io.StringIO("\n".join([header, line, memory])))
        assert store.aliases() == {}
        assert list(store.iter()) == []


def test_a_repeated_alias_key_in_a_file_is_refused() -> None:
    lines = [
        '{"type":"header","format":"embedmind-jsonl","version":1,"embedder":null}',
        '{"type": "alias", "key": "bob", "target": "robert"}',
        '{"type": "alias", "key": "BOB", "target": "bobby"}',
    ]
    with embedmind.Store.open(":memory:", embedder=None) as store:
        with pytest.raises(InvalidInputError, match="line 3: key"):
            store.import_jsonl(io.StringIO("\n".join(lines)))
        assert store.aliases() == {}


def test_explain_does_not_call_an_alias_match_context() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.set_aliases({"NYC": "new york"})
        store.remember_many(
            [embedmind.Draft(t, session_id="s") for t in ("I moved to NYC", "nice", "ok then")]
        )
        first = store.recall("new york", mode="text", explain=True)[0]
        assert first.content == "I moved to NYC"
        assert first.channels["text"].via_context == ()
        beside = store.recall("moved", mode="text", explain=True)
        assert any(h.channels["text"].via_context == ("move",) for h in beside)
