"""``EmbedmindChatMessageHistory``: a session's turns as episodic memories.

``BaseChatMessageHistory`` is deprecated upstream; this stays a thin convenience.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from embedmind import Draft, Store, Tier


class EmbedmindChatMessageHistory(BaseChatMessageHistory):
    """Chat turns of one session, stored as episodic memories in order."""

    def __init__(self, store: Store, session_id: str, *, namespace: str = "chat") -> None:
        self.store = store
        self.session_id = session_id
        self.namespace = namespace

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The session's messages, oldest first."""
        memories = self.store.iter(self.namespace, session_id=self.session_id)
        return messages_from_dict([m.metadata["message"] for m in memories])

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages to the session."""
        start = dt.datetime.now(dt.timezone.utc)
        self.store.remember_many(
            [
                Draft(
                    str(message.content),
                    namespace=self.namespace,
                    session_id=self.session_id,
                    tier=Tier.EPISODIC,
                    agent=message.type,
                    metadata={"message": message_to_dict(message)},
                    created_at=start + dt.timedelta(microseconds=i),
                )
                for i, message in enumerate(messages)
            ]
        )

    def clear(self) -> None:
        """Forget the session's messages."""
        for memory in list(self.store.iter(self.namespace, session_id=self.session_id)):
            self.store.delete(memory.id)
