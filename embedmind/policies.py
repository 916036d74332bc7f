"""Per-store write policies: fragment-embed-on-write and cap-cull eviction.

Both apply to memories in their scope — a namespace scope (``"a/b"``,
``"a/b/*"``, a list, or ``None`` for all) and optionally a set of tiers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from embedmind.checks import an_int
from embedmind.chunking import BUILT_IN, Chunker
from embedmind.errors import InvalidInputError
from embedmind.model import Memory, Tier
from embedmind.query.scope import in_scope, normalize_scope


@dataclass(frozen=True)
class FragmentPolicy:
    """Chunk and embed each written memory into the fragment index, best effort.

    Attributes:
        chunker: A registered chunker name (``"sentences"``, ``"paragraphs"``,
            ``"tokens"``, ``"words"``, ``"characters"``) or a function
            ``(text, window, overlap) -> [(start, end), ...]``.
        window: Chunk size (tokens for ``"tokens"``, words for ``"words"``,
            characters otherwise).
        overlap: Shared size between consecutive chunks.
        namespaces: Which namespaces it applies to (``None``: all).
        tiers: Which tiers it applies to (empty: all).
    """

    chunker: str | Chunker = "sentences"
    window: int = 512
    overlap: int = 0
    namespaces: str | Sequence[str] | None = None
    tiers: Sequence[Tier | str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        _normalize_scope(self)

    def resolve(self) -> Chunker:
        """The chunker function.

        Raises:
            InvalidInputError: When the name is unknown or the sizes are invalid.
        """
        an_int(self.window, "window", low=1)
        an_int(
            self.overlap,
            "overlap",
            low=0,
            high=self.window - 1,
            message="expected an int within [0, window)",
        )
        if callable(self.chunker):
            return self.chunker
        from embedmind.plugins import chunkers

        found = chunkers().get(self.chunker) or BUILT_IN.get(self.chunker)
        if found is None:
            raise InvalidInputError("chunker", f"unknown chunker {self.chunker!r}")
        return found

    def applies(self, memory: Memory) -> bool:
        """Whether ``memory`` is in this policy's scope."""
        return self.covers(memory.namespace, memory.tier.value)

    def covers(self, namespace: str, tier: str) -> bool:
        """Whether a memory in ``namespace`` and ``tier`` is in this policy's scope."""
        return _applies(namespace, tier, self.namespaces, self.tiers)


@dataclass(frozen=True)
class EvictionPolicy:
    """Keep at most ``max_records`` live memories per namespace (and tier) in scope.

    Writing past the cap evicts the oldest memories (by ``created_at``) in the
    same transaction; their vectors and fragments go with them.

    Attributes:
        max_records: The cap.
        namespaces: Which namespaces it applies to (``None``: all).
        tiers: Which tiers it applies to, each counted separately (empty: all
            tiers counted together).
    """

    max_records: int
    namespaces: str | Sequence[str] | None = None
    tiers: Sequence[Tier | str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        an_int(self.max_records, "max_records", low=1)
        _normalize_scope(self)

    def applies(self, memory: Memory) -> bool:
        """Whether ``memory`` is in this policy's scope."""
        return self.covers(memory.namespace, memory.tier.value)

    def covers(self, namespace: str, tier: str) -> bool:
        """Whether a memory in ``namespace`` and ``tier`` is in this policy's scope."""
        return _applies(namespace, tier, self.namespaces, self.tiers)


def _normalize_scope(policy: FragmentPolicy | EvictionPolicy) -> None:
    """Store the policy's namespaces in NFC, as the engine stores every namespace.

    An NFD spelling (``e`` and a combining acute for ``é``) would otherwise match no
    memory and the policy would silently never apply.

    Raises:
        InvalidInputError: When a namespace of the scope is invalid or the list is empty.
    """
    scope = normalize_scope(policy.namespaces, "namespaces")
    normal = scope[0] if scope is not None and isinstance(policy.namespaces, str) else scope
    object.__setattr__(policy, "namespaces", normal)  # frozen: set once, at construction


def _applies(
    namespace: str, tier: str, namespaces: str | Sequence[str] | None, tiers: Sequence[Tier | str]
) -> bool:
    if not in_scope(namespace, namespaces):
        return False
    return not tiers or tier in {Tier(t).value for t in tiers}
