"""``create_agent(..., store=EmbedmindStore(...))``: tools reach the store as LangChain's docs show."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_embedmind import EmbedmindStore
from langgraph.config import get_store

import embedmind

DIMS = 32
FACT = "Ana drinks green tea every morning"


class ToolCallingFakeChatModel(GenericFakeChatModel):
    """The scripted fake chat model, accepting ``bind_tools`` as ``create_agent`` needs."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFakeChatModel:
        return self


@dataclass
class Context:
    user_id: str


@tool
def remember(text: str, runtime: ToolRuntime[Context]) -> str:
    """Save a fact about the user to long-term memory."""
    assert runtime.store is not None, "the agent was built without a store"
    runtime.store.put(("memories", runtime.context.user_id), "fact-1", {"text": text})
    return "saved"


@tool
def recall(query: str, runtime: ToolRuntime[Context]) -> str:
    """Search long-term memory for facts about the user."""
    assert get_store() is runtime.store  # the other documented way reaches the same store
    assert runtime.store is not None, "the agent was built without a store"
    found = runtime.store.search(("memories", runtime.context.user_id), query=query, limit=3)
    return "\n".join(f"{item.key}|{item.value['text']}|{item.score}" for item in found)


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


@pytest.fixture
def store() -> Iterator[EmbedmindStore]:
    embed = DeterministicFakeEmbedding(size=DIMS)
    with embedmind.Store.open(":memory:", embedder=embed) as engine:
        yield EmbedmindStore(engine, index={"embed": embed, "dims": DIMS, "fields": ["text"]})


def test_create_agent_tools_write_and_search_the_embedmind_store(store: EmbedmindStore) -> None:
    model = ToolCallingFakeChatModel(
        messages=iter(
            [
                _call("remember", {"text": FACT}, "call-1"),
                AIMessage(content="I'll remember that."),
                _call("recall", {"query": FACT}, "call-2"),
                AIMessage(content="You drink green tea."),
            ]
        )
    )
    agent = create_agent(model, tools=[remember, recall], store=store, context_schema=Context)

    first = agent.invoke(
        {"messages": [HumanMessage("I drink green tea every morning")]},
        context=Context(user_id="ana"),
    )
    assert [m.content for m in first["messages"] if isinstance(m, ToolMessage)] == ["saved"]
    assert first["messages"][-1].content == "I'll remember that."

    namespace = ("memories", "ana")
    item = store.get(namespace, "fact-1")
    assert item is not None and item.value == {"text": FACT}
    hits = store.search(namespace, query=FACT)
    assert [h.key for h in hits] == ["fact-1"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)  # same text, same vector

    second = agent.invoke(
        {"messages": [HumanMessage("What do I drink?")]},
        context=Context(user_id="ana"),
    )
    (tool_output,) = [m.content for m in second["messages"] if isinstance(m, ToolMessage)]
    assert isinstance(tool_output, str)
    key, text, score = tool_output.split("|")
    assert (key, text) == ("fact-1", FACT)
    assert float(score) == pytest.approx(1.0, abs=1e-6)
    assert second["messages"][-1].content == "You drink green tea."
