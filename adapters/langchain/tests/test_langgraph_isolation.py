"""Namespace isolation of ``EmbedmindStore`` labels, with InMemoryStore over NFC labels as the oracle.

Look-alike spellings (U+212B and U+00C5, ``e`` + U+0301 and U+00E9) are one
label once NFC-normalised, as the engine stores namespaces; every other pair of
label tuples (``/``, ``%``, ``*``, blanks and combining marks included) stays
apart in ``get``, ``search`` (listing and query) and ``list_namespaces``.
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

ALPHABET = ["a", "b", "F", "2", "\u212b", "\u00c5", "e", "\u0301", "\u00e9", "\u0307"]
ALPHABET += ["/", "%", "*", " ", "\t", "%2F", "%u"]
labels = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=4).map("".join)
namespaces = st.lists(labels, min_size=1, max_size=3).map(tuple)


def _nfc(namespace: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(unicodedata.normalize("NFC", label) for label in namespace)


def _seen(found: Sequence[Item]) -> list[tuple[tuple[str, ...], str, object]]:
    return sorted((i.namespace, i.key, i.value["secret"]) for i in found)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(namespaces, min_size=1, max_size=5))
def test_an_item_is_found_only_under_its_own_namespace(spellings: list[tuple[str, ...]]) -> None:
    reference = InMemoryStore()
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(32)) as engine:
        ours = EmbedmindStore(engine)
        for n, namespace in enumerate(spellings):
            value = {"secret": n, "text": f"secret number {n}"}
            ours.put(namespace, "k", value)
            reference.put(_nfc(namespace), "k", value)
        for namespace in spellings:
            mine, theirs = ours.get(namespace, "k"), reference.get(_nfc(namespace), "k")
            assert mine is not None and theirs is not None
            assert (mine.namespace, mine.value) == (theirs.namespace, theirs.value)
            expected = _seen(reference.search(_nfc(namespace), limit=100))
            assert _seen(ours.search(namespace, limit=100)) == expected
            assert _seen(ours.search(namespace, query="secret number", limit=100)) == expected
            prefix = ours.list_namespaces(prefix=namespace)
            assert prefix == reference.list_namespaces(prefix=_nfc(namespace))
        assert ours.list_namespaces(limit=100) == reference.list_namespaces(limit=100)


@given(labels)
def test_a_label_survives_its_encoding_under_nfc(label: str) -> None:
    label = unicodedata.normalize("NFC", label)
    segment = encode_label(label)
    assert "/" not in segment and "*" not in segment and segment.strip()
    assert decode_label(unicodedata.normalize("NFC", segment)) == label


def test_look_alike_spellings_are_one_namespace() -> None:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(32)) as engine:
        ours = EmbedmindStore(engine)
        ours.put(("users", "\u212b"), "k", {"secret": "angstrom"})
        assert ours.get(("users", "\u212b"), "k") is not None  # the non-NFC spelling finds it
        ours.put(("users", "\u00c5"), "k", {"secret": "a-ring"})  # the same item: an update
        assert [i.value for i in ours.search(("users",))] == [{"secret": "a-ring"}]
        ours.put(("e\u0301",), "k", {"secret": 1})
        found = ours.get(("\u00e9",), "k")
        assert found is not None and found.value == {"secret": 1}
        assert ours.list_namespaces() == [("users", "\u00c5"), ("\u00e9",)]
