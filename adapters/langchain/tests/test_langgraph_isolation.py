"""Namespace and key isolation of ``EmbedmindStore``, with LangGraph's InMemoryStore as the oracle.

Two labels (or keys) that differ in any code point are two labels, as in
InMemoryStore: canonically equivalent spellings (U+212B and U+00C5, ``e`` +
U+0301 and U+00E9, Hangul jamo and their syllable), compatibility forms
(U+FB01) and characters the engine gives a meaning to (``/``, ``%``, ``*``,
blanks, combining marks) never merge in ``put``, ``get``, ``search`` (listing
and query) or ``list_namespaces``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings
from langchain_embedmind import EmbedmindStore
from langchain_embedmind.store_namespaces import decode_label, encode_label
from langgraph.store.base import Item
from langgraph.store.memory import InMemoryStore

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

LOOK_ALIKES = ["\u212b", "\u00c5", "A\u030a", "e\u0301", "\u00e9", "\u0301", "\u0307", "\u0323"]
LOOK_ALIKES += ["\u2126", "\u03a9", "\ufb01", "fi", "\u1100\u1161", "\uac00", "\u1161", "\u0958"]
ALPHABET = [*LOOK_ALIKES, "a", "F", "2", "/", "%", "*", " ", "\t", "%2F", "%u", "%u00212B"]
labels = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=4).map("".join)
namespaces = st.lists(labels, min_size=1, max_size=3).map(tuple)
any_label = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters=".\x00"), min_size=1
)


def _seen(found: Sequence[Item]) -> list[tuple[tuple[str, ...], str, object]]:
    return sorted((i.namespace, i.key, i.value["secret"]) for i in found)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(namespaces, labels), min_size=1, max_size=6))
def test_an_item_is_found_only_under_its_own_namespace_and_key(
    items: list[tuple[tuple[str, ...], str]],
) -> None:
    reference = InMemoryStore()
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(32)) as engine:
        ours = EmbedmindStore(engine)
        for n, (namespace, key) in enumerate(items):
            value = {"secret": n, "text": f"secret number {n}"}
            ours.put(namespace, key, value)
            reference.put(namespace, key, value)
        for namespace, key in items:
            mine, theirs = ours.get(namespace, key), reference.get(namespace, key)
            assert mine is not None and theirs is not None
            assert (mine.namespace, mine.key, mine.value) == (theirs.namespace, key, theirs.value)
            expected = _seen(reference.search(namespace, limit=100))
            assert _seen(ours.search(namespace, limit=100)) == expected
            assert _seen(ours.search(namespace, query="secret number", limit=100)) == expected
            prefix = ours.list_namespaces(prefix=namespace)
            assert prefix == reference.list_namespaces(prefix=namespace)
            suffix = ours.list_namespaces(suffix=namespace[-1:])
            assert suffix == reference.list_namespaces(suffix=namespace[-1:])
        assert ours.list_namespaces(limit=100) == reference.list_namespaces(limit=100)
        assert _seen(ours.search((), limit=100)) == _seen(reference.search((), limit=100))


@given(st.one_of(labels, any_label))
def test_a_label_is_one_segment_the_engine_stores_unchanged(label: str) -> None:
    segment = encode_label(label)
    assert "/" not in segment and "*" not in segment and segment.strip()
    assert not any(unicodedata.category(ch) in ("Cc", "Cs") for ch in segment)
    assert unicodedata.is_normalized("NFC", segment)  # so the engine keeps it as given
    assert decode_label(segment) == label


def test_labels_stored_before_keep_their_namespace() -> None:
    # An NFC label's segment is what earlier versions wrote, so their items are found.
    assert [encode_label(label) for label in ["users", "\u00c5", "a/b", "50%", " ", "\u0301x"]] == [
        "users", "\u00c5", "a%2Fb", "50%25", "%20", "%u000301x",
    ]  # fmt: skip


def test_look_alike_spellings_are_distinct_labels() -> None:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(32)) as engine:
        ours = EmbedmindStore(engine)
        ours.put(("users", "\u212b"), "k", {"secret": "angstrom"})
        assert ours.get(("users", "\u00c5"), "k") is None
        ours.put(("users", "\u00c5"), "k", {"secret": "a-ring"})
        assert ours.get(("users", "\u212b"), "k").value == {"secret": "angstrom"}
        assert [i.value for i in ours.search(("users", "\u00c5"))] == [{"secret": "a-ring"}]
        ours.put(("users", "\u00c5"), "\u212b", {"secret": "key"})
        assert ours.get(("users", "\u00c5"), "k").value == {"secret": "a-ring"}
        assert ours.list_namespaces() == [("users", "\u00c5"), ("users", "\u212b")]


def test_a_root_of_several_segments_in_any_spelling_round_trips() -> None:
    reference = InMemoryStore()
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(32)) as engine:
        ours = EmbedmindStore(engine, root="apps/cafe\u0301")  # NFD: the engine keeps NFC
        for store in (ours, reference):
            store.put(("users", "ana"), "k", {"secret": 1, "text": "green tea"})
        assert ours.get(("users", "ana"), "k") is not None
        assert _seen(ours.search(("users",))) == _seen(reference.search(("users",)))
        assert ours.list_namespaces() == reference.list_namespaces() == [("users", "ana")]
