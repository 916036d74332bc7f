"""Fragment-embed-on-write: after a memory commits, chunk it, embed the chunks, replace.

Best effort, as in the fragment seed: an embedder failure (bad output or an
exception) or an index failure is logged with the record id and never fails
the write that already committed. Content whose fingerprint already produced
the record's fragments is not embedded again. Like every fragment write, the
replacement saves the fragment index file once enough changes are unsaved.
"""

from __future__ import annotations

import logging
from typing import Protocol

import apsw

from embedmind.backend.sqlite import fragment_rows as rows
from embedmind.backend.sqlite import records, vector_rows
from embedmind.backend.sqlite.database import Database
from embedmind.backend.sqlite.vector_rows import FRAGMENTS
from embedmind.chunking import Chunker
from embedmind.embedders.adapt import normalized
from embedmind.embedders.protocol import Embedder
from embedmind.errors import InvalidInputError
from embedmind.model import Memory
from embedmind.policies import FragmentPolicy

logger = logging.getLogger(__name__)


class FragmentIndex(Protocol):
    """What this module needs of :class:`embedmind.fragments.Fragments` (no import of it)."""

    def save_if_due(self, conn: apsw.Connection) -> bool:
        """Save the index file inside the caller's write transaction when enough is unsaved."""
        ...


def fragment_on_write(
    db: Database,
    fragments: FragmentIndex,
    embedder: Embedder,
    chunker: Chunker,
    policy: FragmentPolicy,
    memory: Memory,
) -> None:
    """Derive ``memory``'s fragments (never raises)."""
    with db.read() as conn:
        existing = records.find(conn, memory.id)
        if existing is None or existing.forgotten:
            return
        if rows.source(conn, existing.key) == memory.fingerprint:
            return  # identical content: its fragments are current
    spans = [s for s in chunker(memory.content, policy.window, policy.overlap) if s[0] < s[1]]
    texts = [memory.content[a:b] for a, b in spans]
    try:
        vectors = normalized(embedder.embed_documents(texts), embedder.dims) if texts else None
    except InvalidInputError as e:
        logger.warning("fragment embedding %r failed: %s", memory.id, e)
        return
    except Exception as e:
        logger.warning("fragment embedding %r threw: %s", memory.id, e)
        return
    try:
        with db.write() as conn:
            current = records.find(conn, memory.id)
            if current is None or current.forgotten or current.content != memory.content:
                return  # changed or gone meanwhile: the newer write handles it
            vector_rows.remove_memory(conn, current.key, FRAGMENTS)
            if vectors is not None:
                blobs = [row.astype("<f4").tobytes() for row in vectors]
                rows.add(conn, current.key, spans, blobs, texts)
            rows.set_source(conn, current.key, memory.fingerprint)
            fragments.save_if_due(conn)
    except Exception as e:
        logger.warning("fragment add for %r failed: %s", memory.id, e)
