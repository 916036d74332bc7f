"""LlamaIndex ``Memory`` with a ``VectorMemoryBlock`` over the store, offline."""

from __future__ import annotations

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory, VectorMemoryBlock
from llama_index.vector_stores.embedmind import EmbedmindEmbedding, EmbedmindVectorStore

import embedmind
from embedmind.embedders.hashing import HashingEmbedder


def _memory(vs: EmbedmindVectorStore, session: str) -> Memory:
    block = VectorMemoryBlock(
        vector_store=vs, embed_model=EmbedmindEmbedding("hashing"), similarity_top_k=1
    )
    return Memory.from_defaults(
        session_id=session, token_limit=60, chat_history_token_ratio=0.5, token_flush_size=20,
        memory_blocks=[block],
    )  # fmt: skip


def test_a_flushed_fact_is_recalled_in_its_session_only() -> None:
    vs = EmbedmindVectorStore(embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)))
    memory = _memory(vs, "s1")
    memory.put(ChatMessage(role="user", content="My cat Miso likes tuna."))
    for i in range(8):
        memory.put(ChatMessage(role="user", content=f"Filler {i} weather rain sun clouds."))
    memory.put(ChatMessage(role="user", content="What does my cat Miso like?"))
    assert "Miso likes tuna" in memory.get()[0].content  # recalled from the flushed history
    other = _memory(vs, "s2")
    other.put(ChatMessage(role="user", content="What does my cat Miso like?"))
    assert all("tuna" not in m.content for m in other.get())  # the session filter isolates


async def test_a_none_session_id_round_trips() -> None:
    vs = EmbedmindVectorStore(embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)))
    block = VectorMemoryBlock(
        vector_store=vs, embed_model=EmbedmindEmbedding("hashing"), similarity_top_k=1
    )
    await block.aput([ChatMessage(role="user", content="The wifi password rotates on Mondays.")])
    assert [n.metadata for n in vs.get_nodes()] == [{"session_id": None}]
    found = await block.aget([ChatMessage(role="user", content="wifi password")], session_id=None)
    assert "wifi password rotates" in found


def test_the_entry_point_module_imports_no_llama_index_core() -> None:
    import subprocess
    import sys

    code = (
        "import sys, llama_index.vector_stores.embedmind.plugin; "
        "print([m for m in sys.modules if m.startswith('llama_index.core')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
