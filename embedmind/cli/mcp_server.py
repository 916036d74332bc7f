"""``embedmind mcp``: the store as a Model Context Protocol server over stdio.

Coding agents and desktop assistants speak MCP; with this server any of them
gets a durable local memory. The agent identity (``--agent``) and a session
id minted per server run are recorded as provenance on every write. The
server's namespace scopes every call that names none; a call may name
another namespace only inside the allowed set (``--allow``; default: the
server's namespace and its subtree) — anything else is refused, and a memory
outside it is reported as not found, so nothing leaks: every memory a tool
returns (hits, links, versions) and every id it names passes the same test.
Namespaces are compared in Unicode NFC, as the store keeps them. Errors come
back as MCP tool errors carrying the typed error's message; the server keeps
serving. Every argument is checked once, with a typed reason: its shape by the
tool's signature (a relation is exactly a ``[kind, target_id]`` pair; a
mismatch reads as an InvalidInputError, see :mod:`embedmind.cli.mcp_wire`),
its value by the engine's own checks (numbers finite and in range). A line the
transport cannot parse gets a JSON-RPC error. Results are compact JSON (no
indent): an agent pays for every token.
Requires the optional ``mcp`` package (``pip install "embedmind[mcp]"``; from
a clone, ``pip install ".[mcp]"``).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from embedmind import __version__
from embedmind.checks import seconds
from embedmind.errors import EmbedmindError, InvalidInputError, NotFoundError
from embedmind.ids import new_ulid
from embedmind.model import Memory, Recall
from embedmind.query.scope import SUBTREE_SUFFIX, in_scope, normalize_namespace
from embedmind.store import Store


def _pattern(item: str) -> str:
    """An allow-list entry, validated and in NFC (``"a/b"`` or the subtree ``"a/b/*"``)."""
    if item.endswith(SUBTREE_SUFFIX):
        return normalize_namespace(item[: -len(SUBTREE_SUFFIX)], "allow") + SUBTREE_SUFFIX
    return normalize_namespace(item, "allow")


class Scope:
    """Which namespaces the server may touch."""

    def __init__(self, default: str, allow: Sequence[str]) -> None:
        self.default = normalize_namespace(default)
        # NFC, like the namespaces the store keeps: an NFD spelling of an
        # allowed namespace (as a shell or a config file may pass it) would
        # otherwise match nothing.
        self.allow = [_pattern(item) for item in allow] or [
            self.default,
            self.default + SUBTREE_SUFFIX,
        ]

    def contains(self, namespace: str) -> bool:
        """Whether ``namespace`` lies in the allowed set (compared in NFC)."""
        return in_scope(unicodedata.normalize("NFC", namespace), self.allow)

    def check(self, namespace: str | None) -> str:
        """The namespace to use; refuses one outside the allowed set."""
        chosen = self.default if namespace is None else normalize_namespace(namespace)
        if not self.contains(chosen):
            raise InvalidInputError(
                "namespace",
                f"{chosen!r} is outside what this server may access ({', '.join(self.allow)})",
            )
        return chosen

    def check_scope(self, namespace: str | list[str] | None) -> str | list[str]:
        """A read's scope (a namespace, a subtree ``a/b/*`` or a list of them) inside the set.

        Each item must lie inside the allowed set: a namespace the set holds, or
        a subtree whose root an allowed subtree covers. The scope is returned in
        the form the store takes, so the read is bounded by the engine itself.

        Raises:
            InvalidInputError: When an item reaches outside the allowed set.
        """
        if namespace is None:
            return self.default
        items = [namespace] if isinstance(namespace, str) else list(namespace)
        if not items:
            raise InvalidInputError("namespace", "an empty list names nothing: omit it or name one")
        checked = [self._scope_item(item) for item in items]
        return checked[0] if isinstance(namespace, str) else checked

    def _scope_item(self, item: str) -> str:
        if not item.endswith(SUBTREE_SUFFIX):
            return self.check(item)
        root = normalize_namespace(item[: -len(SUBTREE_SUFFIX)])
        # in_scope of an allowed subtree "r/*": the root is r or lies below it.
        if not any(a.endswith(SUBTREE_SUFFIX) and in_scope(root, [a]) for a in self.allow):
            raise InvalidInputError(
                "namespace",
                f"{item!r} reaches outside what this server may access ({', '.join(self.allow)})",
            )
        return root + SUBTREE_SUFFIX

    def visible(self, memory: Memory | None, id: str) -> Memory:
        """The memory, or not-found naming ``id`` when it lies outside the allowed set."""
        if memory is None or not self.contains(memory.namespace):
            # The caller's own id, never the memory's namespace: "not found"
            # must read the same whether it is missing or out of reach.
            raise NotFoundError(id)
        return memory

    def within(self, memories: Sequence[Memory]) -> list[Memory]:
        """The memories that lie in the allowed set, in order."""
        return [m for m in memories if self.contains(m.namespace)]


def _memory(m: Memory, superseded_by: str | None) -> dict[str, Any]:
    return {
        "id": m.id,
        "namespace": m.namespace,
        "content": m.content,
        "metadata": m.metadata,
        "tags": list(m.tags),
        "tier": m.tier.value,
        "created_at": m.created_at.isoformat(),
        "updated_at": m.updated_at.isoformat(),
        "valid_to": None if m.valid_to is None else m.valid_to.isoformat(),
        "superseded_by": superseded_by,
    }


F = TypeVar("F", bound=Callable[..., Any])


def compact(value: Any) -> str:
    """``value`` as JSON without indent or spaces (the SDK's default indents by 2)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _result(value: dict[str, Any] | list[Any]) -> Any:
    """A tool result: compact JSON text, and the same value as structured content.

    The SDK wraps a list in ``{"result": ...}`` for its output schema, and would
    otherwise split it into one text block per item.
    """
    from mcp.types import CallToolResult, TextContent

    structured = value if isinstance(value, dict) else {"result": value}
    return CallToolResult(
        content=[TextContent(type="text", text=compact(value))], structured_content=structured
    )


def _typed_errors(tool: F) -> F:
    """Return compact results; turn embedmind's typed errors into MCP tool errors."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(tool)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return _result(tool(*args, **kwargs))
        except (EmbedmindError, ValueError, TypeError) as e:
            raise ToolError(f"{type(e).__name__}: {e}") from e

    return cast(F, wrapper)


def _instant(value: str | None, field: str) -> dt.datetime | None:
    """An ISO 8601 argument as a datetime (the engine checks its range)."""
    if value is None:
        return None
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(
            field, f"{value!r} is not an ISO 8601 date-time, e.g. 2024-05-01T09:30:00+00:00"
        ) from None


def build_server(store: Store, scope: Scope, agent: str) -> Any:
    """The MCP server object with embedmind's tools registered."""
    from embedmind.cli.mcp_wire import EmbedmindMCPServer

    def tool() -> Callable[[F], F]:
        register = server.tool()
        return lambda function: register(_typed_errors(function))

    def shown(m: Memory) -> dict[str, Any]:
        """A memory as a tool returns it; a successor out of reach is not named."""
        newer = m.superseded_by
        if newer is not None:
            successor = store.get(newer)
            if successor is None or not scope.contains(successor.namespace):
                newer = None
        return _memory(m, newer)

    def hits(result: Recall) -> dict[str, Any]:
        # The recall was scoped to one allowed namespace; filtering again keeps
        # the promise should the engine ever widen a scope (links, expansion).
        return {
            "hits": [
                {"score": h.score, "rank": h.rank, **shown(h.memory)}
                for h in result
                if scope.contains(h.memory.namespace)
            ],
            "degraded": list(result.degraded),
        }

    session = new_ulid()
    server = EmbedmindMCPServer(
        "embedmind",
        version=__version__,
        instructions=(
            "A durable long-term memory. Use `recall` before answering questions about the "
            "user, their projects or earlier conversations; use `remember` to keep facts, "
            "preferences and decisions worth knowing later (check the near-duplicate hints it "
            "returns and pass `supersedes` to replace an outdated memory instead of piling up "
            "twins)."
        ),
    )

    @tool()
    def remember(
        content: str,
        namespace: str | None = None,
        metadata: dict[str, Any] | None = None,
        tags: list[str] | None = None,
        entities: list[str] | None = None,
        relations: list[tuple[str, str]] | None = None,
        supersedes: list[str] | None = None,
        ttl_seconds: float | None = None,
    ) -> dict[str, Any]:
        """Store a fact, preference or decision worth remembering later.

        Returns the stored memory and near-duplicate hints (similar existing
        memories): if one says the same thing in an outdated way, call again
        with `supersedes=[its id]` so only the current version is recalled.
        `relations` is a list of [kind, target_id] pairs; `ttl_seconds` makes
        the memory expire.
        """
        target = scope.check(namespace)
        ttl = None if ttl_seconds is None else seconds(ttl_seconds, "ttl_seconds")
        # The signature admits pairs only: a relation is never dropped here.
        links = tuple(relations or ())
        for target_id in [*(supersedes or ()), *(t for _, t in links)]:
            scope.visible(store.get(target_id), target_id)
        outcome = store.remember_detailed(
            content,
            namespace=target,
            metadata=metadata,
            tags=tuple(tags or ()),
            entities=tuple(entities or ()),
            relations=links,
            supersedes=tuple(supersedes or ()),
            ttl=ttl,
            agent=agent,
            session_id=session,
        )
        return {
            "memory": shown(outcome.memory),
            "similar": [
                {"id": s.id, "content": s.content, "score": s.score} for s in outcome.similar
            ],
        }

    @tool()
    def recall(
        query: str,
        k: int = 8,
        namespace: str | list[str] | None = None,
        where: dict[str, Any] | None = None,
        as_of: str | None = None,
        expand_related: bool = False,
        recency: bool = False,
        temporal: bool = False,
        widen: bool = False,
        latest: bool = False,
        min_score: float | None = None,
    ) -> dict[str, Any]:
        """Find the memories most relevant to a question (hybrid keyword + semantic search).

        Each hit's `score` is the estimated probability (0-1) that it is
        relevant; `min_score` leaves out the hits scoring below it (the others
        keep their ranks), so an answer can rest on likely hits only.

        `where` filters metadata (e.g. {"topic": "drinks"}, {"year": {"$gte": 2024}});
        `as_of` (ISO 8601) asks what was true at that time; `expand_related`
        adds linked memories; `recency` prefers newer memories among equals;
        `temporal` moves up memories written near a date the question names
        ("in May 2023", "last week"); `widen` also considers memories that
        match the question's rarest words alone; `latest` puts the newest of
        the best-matching memories first when the question asks for a current
        value ("where does she live now?"). `namespace` may be a subtree
        ("team/*") or a list of namespaces and subtrees, inside what this
        server may access.
        """
        result = store.recall(
            query,
            k=k,
            namespace=scope.check_scope(namespace),
            where=where,
            as_of=_instant(as_of, "as_of"),
            expand_related=expand_related,
            recency=recency,
            temporal=temporal,
            widen=widen,
            latest=latest,
            min_score=min_score,
        )
        return hits(result)

    @tool()
    def get(id: str) -> dict[str, Any]:
        """Read one memory by id (superseded versions included, as history)."""
        return shown(scope.visible(store.get(id), id))

    @tool()
    def forget(id: str) -> dict[str, Any]:
        """Forget a memory that is wrong or no longer wanted."""
        scope.visible(store.get(id), id)
        return {"id": id, "forgotten": store.forget(id)}

    @tool()
    def related(id: str) -> list[dict[str, Any]]:
        """Memories linked to this one (relations and supersede edges, both directions)."""
        scope.visible(store.get(id), id)
        return [
            {"kind": r.kind, "outgoing": r.outgoing, **shown(r.memory)}
            for r in store.related(id)
            if scope.contains(r.memory.namespace)
        ]

    @tool()
    def lineage(id: str) -> dict[str, Any]:
        """The version history of a memory: what it replaced and what replaced it."""
        scope.visible(store.get(id), id)
        found = store.lineage(id)
        # Moves and renames can carry versions of one chain into namespaces
        # outside the allowed set; those are left out, as if they did not exist.
        return {
            "older": [shown(m) for m in scope.within(found.older)],
            "newer": [shown(m) for m in scope.within(found.newer)],
        }

    @tool()
    def stats() -> dict[str, Any]:
        """How many memories this server can see, per namespace."""
        counts = {n: c for n, c in store.stats().by_namespace.items() if scope.contains(n)}
        return {
            "live": sum(counts.values()),
            "by_namespace": counts,
            "session": session,
            "agent": agent,
        }

    return server


def serve(path: str, namespace: str, agent: str, allow: Sequence[str], embedder: str) -> int:
    """Run the server on stdio until the client disconnects."""
    scope = Scope(namespace, allow)
    with Store.open(path, embedder=embedder) as store:
        build_server(store, scope, agent).run(transport="stdio")
    return 0
