"""Two tenants (namespaces) of one store: neither can block nor probe the other's node ids.

The oracle is the tenant alone: everything tenant B does and sees on a store
it shares with tenant A (adds, every read, deletes) equals what it does and
sees on a store of its own. Stores written before node ids were scoped (a
memory id equal to the node id) stay readable, updatable and deletable.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index.core.vector_stores.utils import node_to_metadata_dict
from llama_index.vector_stores.embedmind import EmbedmindVectorStore

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

EMBED = HashingEmbedder(32)
IDS = ["report.pdf", "notes/q3.txt", "n1", "\u00c5", "A\u030a"]  # the last two differ only by NFC


def _node(node_id: str, text: str, doc: str = "doc") -> TextNode:
    node = TextNode(text=text, id_=node_id, metadata={"text": text})
    node.relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc)}
    node.embedding = EMBED.embed_documents([text])[0].tolist()
    return node


def _view(vs: EmbedmindVectorStore, ids: list[str]) -> dict[str, Any]:
    """Everything a tenant can observe of its store, in a comparable form."""
    query = VectorStoreQuery(
        query_embedding=EMBED.embed_query("secret file").tolist(),
        query_str="secret file",
        similarity_top_k=20,
    )
    found = vs.query(query)
    return {
        "all": sorted((n.node_id, n.get_content()) for n in vs.get_nodes()),
        "by_id": sorted((n.node_id, n.get_content()) for n in vs.get_nodes(node_ids=ids)),
        "query": sorted(zip(found.ids or [], [n.node_id for n in found.nodes or []], strict=True)),
    }


def _tenant_b(vs: EmbedmindVectorStore, ids: list[str], deleted: list[str]) -> list[Any]:
    views = []
    returned = vs.add([_node(i, f"tenant b secret file {i}", doc=f"b-{i}") for i in ids])
    views.append(returned)
    views.append(_view(vs, IDS))
    vs.add([_node(i, f"tenant b updated file {i}", doc=f"b-{i}") for i in ids[:1]])  # an upsert
    views.append(_view(vs, IDS))
    vs.delete_nodes(node_ids=deleted)
    views.append(_view(vs, IDS))
    if ids:
        vs.delete(f"b-{ids[-1]}")
    views.append(_view(vs, IDS))
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
        tenant_a.add([_node(i, f"tenant a secret file {i}") for i in a_ids])
        seen_shared = _tenant_b(EmbedmindVectorStore(shared, namespace="tenant/b"), b_ids, deleted)
        seen_alone = _tenant_b(EmbedmindVectorStore(alone, namespace="tenant/b"), b_ids, deleted)
        assert seen_shared == seen_alone
        # Tenant A's nodes are untouched by everything B did.
        assert sorted(n.get_content() for n in tenant_a.get_nodes()) == sorted(
            f"tenant a secret file {i}" for i in a_ids
        )


def _legacy_add(store: embedmind.Store, namespace: str, nodes: list[TextNode]) -> None:
    """Write nodes as the adapter did before ids were scoped: the memory id is the node id."""
    drafts = []
    for node in nodes:
        serial = node_to_metadata_dict(node, remove_text=True, flat_metadata=False)
        user = dict(node.metadata)
        reserved = {k: v for k, v in serial.items() if k not in user}
        meta = {**user, "__llama_index__": reserved}
        meta |= {"__ref_doc_id__": node.ref_doc_id, "__node_id__": node.node_id}
        draft = embedmind.Draft(node.get_content(), id=node.node_id, namespace=namespace)
        drafts.append(replace(draft, metadata=meta, vector=node.embedding))
    store.remember_many(drafts)


def test_a_store_written_with_raw_node_ids_keeps_working() -> None:
    with embedmind.Store.open(":memory:", embedder=EMBED) as store:
        _legacy_add(store, "tenant/a", [_node("n1", "old tea", "d1"), _node("n2", "old coffee")])
        vs = EmbedmindVectorStore(store, namespace="tenant/a")
        assert sorted(n.node_id for n in vs.get_nodes(node_ids=["n1", "n2"])) == ["n1", "n2"]
        query = VectorStoreQuery(
            query_embedding=_node("q", "old tea").embedding, similarity_top_k=1
        )
        assert vs.query(query).ids == ["n1"]
        vs.add([_node("n1", "new tea", "d1")])  # an upsert of the old memory, not a twin
        assert [m.id for m in store.iter("tenant/a")] == ["n1", "n2"]
        assert [n.get_content() for n in vs.get_nodes(node_ids=["n1"])] == ["new tea"]
        # Another tenant's same id is its own node; the old one is not touched.
        EmbedmindVectorStore(store, namespace="tenant/b").add([_node("n1", "b's tea")])
        assert [n.get_content() for n in vs.get_nodes(node_ids=["n1"])] == ["new tea"]
        vs.delete("d1")
        vs.delete_nodes(node_ids=["n2"])
        assert vs.get_nodes() == []
        assert [m.namespace for m in store.iter()] == ["tenant/b"]
