"""``EmbedmindStore``: LangGraph's long-term memory ``BaseStore`` over embedmind.

Namespace tuples map onto embedmind namespaces under one root with exact
segment semantics (``("a", "b")`` is ``langgraph/a/b``; a ``/`` or ``%`` inside
a label is percent-encoded, so labels never merge). An item's value is the
memory's metadata (so ``filter`` uses embedmind's ``where``), its indexed
text is the memory's content, and ``search`` with a query is hybrid recall.
TTLs (minutes, as LangGraph counts them) map onto embedmind TTLs; reading
with ``refresh_ttl`` slides them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from embedmind import Memory, Store

ROOT = "langgraph"
RESERVED = "__langgraph__"


def _label(text: str) -> str:
    return text.replace("%", "%25").replace("/", "%2F")


def _unlabel(text: str) -> str:
    return text.replace("%2F", "/").replace("%25", "%")


class EmbedmindStore(BaseStore):
    """LangGraph long-term memory backed by an embedmind store."""

    supports_ttl: bool = True

    def __init__(self, store: Store, *, root: str = ROOT) -> None:
        self.store = store
        self.root = root

    # -- mapping -----------------------------------------------------------------

    def _namespace(self, namespace: tuple[str, ...]) -> str:
        if not isinstance(namespace, tuple) or not namespace:
            raise ValueError("a namespace is a non-empty tuple of labels")
        for label in namespace:
            if not isinstance(label, str) or not label or "." in label:
                raise ValueError(f"invalid namespace label {label!r}: non-empty, no '.'")
        return "/".join([self.root, *(_label(label) for label in namespace)])

    def _tuple(self, namespace: str) -> tuple[str, ...]:
        return tuple(_unlabel(part) for part in namespace.split("/")[1:])

    @staticmethod
    def _id(namespace: str, key: str) -> str:
        return "lg:" + hashlib.blake2b(f"{namespace}\x00{key}".encode(), digest_size=16).hexdigest()

    def _item(self, memory: Memory, score: float | None = None, search: bool = False) -> Item:
        value = {k: v for k, v in memory.metadata.items() if k != RESERVED}
        key = memory.metadata[RESERVED]["key"]
        fields: dict[str, Any] = {
            "namespace": self._tuple(memory.namespace),
            "key": key,
            "value": value,
            "created_at": memory.created_at,
            "updated_at": memory.updated_at,
        }
        return SearchItem(**fields, score=score) if search else Item(**fields)

    # -- operations ----------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run Get, Search, Put and ListNamespaces operations in order."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list(op))
            else:
                raise ValueError(f"unknown operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The same operations, in a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _get(self, op: GetOp) -> Item | None:
        namespace = self._namespace(op.namespace)
        memory = self.store.get(self._id(namespace, op.key))
        if memory is None or memory.namespace != namespace or self._expired(memory):
            return None
        if op.refresh_ttl:
            memory = self._refresh(memory)
        return self._item(memory)

    def _expired(self, memory: Memory) -> bool:
        return memory.expires_at is not None and memory.expires_at <= dt.datetime.now(
            dt.timezone.utc
        )

    def _refresh(self, memory: Memory) -> Memory:
        minutes = memory.metadata[RESERVED].get("ttl")
        if minutes is None:
            return memory
        self.store.retier(
            memory.id,
            memory.tier,
            expires_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=minutes),
        )
        return self.store.get(memory.id) or memory

    def _put(self, op: PutOp) -> None:
        namespace = self._namespace(op.namespace)
        memory_id = self._id(namespace, op.key)
        if op.value is None:
            self.store.delete(memory_id)
            return
        if not isinstance(op.key, str) or not op.key:
            raise ValueError("a key is a non-empty str")
        ttl = None if op.ttl is None else dt.timedelta(minutes=op.ttl)
        meta = {"key": op.key, "ttl": op.ttl}
        self.store.remember(
            _indexed_text(op.value, op.index),
            id=memory_id,
            namespace=namespace,
            metadata={**op.value, RESERVED: meta},
            ttl=ttl,
            agent="langgraph",
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        scope = (
            f"{self._namespace(op.namespace_prefix)}/*" if op.namespace_prefix else f"{self.root}/*"
        )
        where = dict(op.filter) if op.filter else None
        found: Sequence[tuple[Memory, float | None]]
        if op.query:
            hits = self.store.recall(op.query, k=op.offset + op.limit, namespace=scope, where=where)
            found = [(hit.memory, hit.score) for hit in hits][op.offset :]
        else:
            listing = [m for m in self.store.iter(scope, where=where)]
            found = [(m, None) for m in listing[op.offset : op.offset + op.limit]]
        items = []
        for memory, score in found:
            if op.refresh_ttl:
                memory = self._refresh(memory)
            items.append(self._item(memory, score, search=True))
        return items  # type: ignore[return-value]

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = [
            self._tuple(activity.namespace)
            for activity in self.store.namespaces()
            if activity.namespace.startswith(self.root + "/")
        ]
        for condition in op.match_conditions or ():
            namespaces = [
                n for n in namespaces if _matches(n, condition.match_type, tuple(condition.path))
            ]
        if op.max_depth is not None:
            namespaces = [n[: op.max_depth] for n in namespaces]
        unique = sorted(set(namespaces))
        return unique[op.offset : op.offset + op.limit]


def _matches(namespace: tuple[str, ...], kind: str, path: tuple[str, ...]) -> bool:
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if kind == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


def _indexed_text(value: Mapping[str, Any], index: Any) -> str:
    if index is False:
        return ""
    if not index:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    parts = []
    for path in index:
        current: Any = value
        for step in str(path).split("."):
            current = current.get(step) if isinstance(current, dict) else None
        if current is not None:
            parts.append(
                current if isinstance(current, str) else json.dumps(current, ensure_ascii=False)
            )
    return "\n".join(parts)
