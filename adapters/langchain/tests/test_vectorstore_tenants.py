"""Two tenants (namespaces) of one store: neither can block nor probe the other's document ids.

The oracle is the tenant alone: everything tenant B does and sees on a store
it shares with tenant A equals what it does and sees on a store of its own.
Documents written before ids were scoped (the memory id is the document id)
stay readable, updatable and deletable.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_embedmind import EmbedmindVectorStore

import embedmind
from embedmind import InvalidInputError
from embedmind.embedders.hashing import HashingEmbedder

EMBED = HashingEmbedder(32)
IDS = ["report.pdf", "notes/q3.txt", "d1", "\u00c5", "A\u030a", "tenant/a*d1"]


def _view(vs: EmbedmindVectorStore) -> dict[str, Any]:
    """Everything a tenant can observe of its store, in a comparable form."""
    return {
        "by_id": sorted((d.id, d.page_content) for d in vs.get_by_ids(IDS)),
        "search": sorted((d.id, d.page_content) for d in vs.similarity_search("secret", k=20)),
    }


def _tenant_b(vs: EmbedmindVectorStore, ids: list[str], deleted: list[str]) -> list[Any]:
    views: list[Any] = [vs.add_texts([f"b secret {i}" for i in ids], ids=ids), _view(vs)]
    documents = [Document(page_content=f"b updated {i}", id=i) for i in ids[:1]]
    views += [vs.add_documents(documents), _view(vs)]  # an upsert
    vs.delete(deleted)
    views.append(_view(vs))
    return views


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    a_ids=st.lists(st.sampled_from(IDS), min_size=1, max_size=5, unique=True),
    b_ids=st.lists(st.sampled_from(IDS), min_size=1, max_size=5, unique=True),
    deleted=st.lists(st.sampled_from(IDS), max_size=3),
)
def test_a_tenant_sees_and_does_exactly_what_it_would_alone(
    a_ids: list[str], b_ids: list[str], deleted: list[str]
) -> None:
    with (
        embedmind.Store.open(":memory:", embedder=EMBED) as shared,
        embedmind.Store.open(":memory:", embedder=EMBED) as alone,
    ):
        tenant_a = EmbedmindVectorStore(shared, namespace="tenant/a")
        tenant_a.add_texts([f"a secret {i}" for i in a_ids], ids=a_ids)
        seen_shared = _tenant_b(EmbedmindVectorStore(shared, namespace="tenant/b"), b_ids, deleted)
        seen_alone = _tenant_b(EmbedmindVectorStore(alone, namespace="tenant/b"), b_ids, deleted)
        assert seen_shared == seen_alone
        assert sorted((d.id, d.page_content) for d in tenant_a.get_by_ids(IDS)) == sorted(
            (i, f"a secret {i}") for i in a_ids
        )
        # A reader of both namespaces sees both tenants' documents, each with its own id.
        both = EmbedmindVectorStore(shared, namespace="tenant/*")
        expected = {(i, f"a secret {i}") for i in a_ids} | set(seen_shared[-1]["by_id"])
        assert {(d.id, d.page_content) for d in both.get_by_ids(IDS)} == expected


def test_a_store_written_with_raw_ids_keeps_working() -> None:
    with embedmind.Store.open(":memory:", embedder=EMBED) as store:
        # As the adapter wrote them before ids were scoped: the memory id is the document id.
        store.remember_many(
            [
                embedmind.Draft("old tea", id="t", namespace="tenant/a"),
                embedmind.Draft("old coffee", id="c", namespace="tenant/a"),
            ]
        )
        vs = EmbedmindVectorStore(store, namespace="tenant/a")
        assert sorted(d.id for d in vs.get_by_ids(["t", "c"])) == ["c", "t"]
        assert vs.similarity_search("old tea", k=1)[0].id == "t"
        vs.add_texts(["new tea"], ids=["t"])  # an upsert of the old memory, not a twin
        assert sorted(m.id for m in store.iter("tenant/a")) == ["c", "t"]
        assert [d.page_content for d in vs.get_by_ids(["t"])] == ["new tea"]
        EmbedmindVectorStore(store, namespace="tenant/b").add_texts(["b's tea"], ids=["t"])
        assert [d.page_content for d in vs.get_by_ids(["t"])] == ["new tea"]
        vs.delete(["t", "c"])
        assert [m.namespace for m in store.iter()] == ["tenant/b"]


def test_an_id_too_long_for_its_namespace_is_a_typed_error() -> None:
    with embedmind.Store.open(":memory:", embedder=EMBED) as store:
        vs = EmbedmindVectorStore(store, namespace="tenant/a")
        with pytest.raises(InvalidInputError, match="at most 247 characters"):
            vs.add_texts(["tea", "coffee"], ids=["ok", "x" * 248])
        assert store.stats().live == 0
        assert vs.add_texts(["tea"], ids=["x" * 247]) == ["x" * 247]
