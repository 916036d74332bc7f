"""The one object the engine's operations share: a store's backend, commit path and policies.

:class:`embedmind.Store` builds one :class:`Engine` when it opens and passes it
(or the part an operation needs) to the functions of :mod:`embedmind.engine`;
nothing else holds a store's state, so no operation reaches another's private
attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from embedmind.backend.protocol import Backend
from embedmind.embedders.protocol import Embedder
from embedmind.engine.commit import CommitPath
from embedmind.fragments import Fragments


@dataclass
class Engine:
    """A store's parts.

    Attributes:
        backend: The backend every read and write session comes from.
        commit: The one write path (:mod:`embedmind.engine.commit`).
        embedder: The embedder (``None``: text only).
        metrics: The metrics observer (any object; missing methods are skipped).
        fragments: The fragment index.
        caches: Per-open-store memos an operation keeps between calls (e.g.
            the missing-vector counts, the text-only warning), by name.
    """

    backend: Backend
    commit: CommitPath
    embedder: Embedder | None
    metrics: Any
    fragments: Fragments
    caches: dict[str, Any] = field(default_factory=dict)
