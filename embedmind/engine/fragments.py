"""Fragment-embed-on-write: after a memory commits, chunk it, embed the chunks, replace.

Best effort, as in the fragment seed: an embedder failure (bad output or an
exception) or an index failure is logged with the record id and never fails
the write that already committed. Content whose fingerprint already produced
the record's fragments is not embedded again. Like every fragment write, the
replacement saves the fragment index file once enough changes are unsaved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from embedmind.backend.protocol import Backend
from embedmind.backend.values import Space
from embedmind.chunking import Chunker
from embedmind.embedders.adapt import normalized
from embedmind.embedders.protocol import Embedder
from embedmind.errors import InvalidInputError
from embedmind.model import Memory
from embedmind.policies import FragmentPolicy

logger = logging.getLogger(__name__)


def fragment_on_write(
    backend: Backend,
    save_after: Callable[[], int],
    embedder: Embedder,
    chunker: Chunker,
    policy: FragmentPolicy,
    memory: Memory,
) -> None:
    """Derive ``memory``'s fragments (never raises).

    The caller is the commit path, after COMMIT: this is its own write session,
    which saves the caches when due like every commit does.
    """
    with backend.read() as session:
        existing = session.records.find(memory.id)
        if existing is None or existing.forgotten:
            return
        if session.fragments.source(existing.key) == memory.fingerprint:
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
        with backend.write() as session:
            current = session.records.find(memory.id)
            if current is None or current.forgotten or current.content != memory.content:
                return  # changed or gone meanwhile: the newer write handles it
            session.records.remove_vectors(current.key, Space.FRAGMENTS)
            if vectors is not None:
                blobs = [row.astype("<f4").tobytes() for row in vectors]
                session.fragments.add(current.key, spans, blobs, texts)
            session.fragments.set_source(current.key, memory.fingerprint)
            session.save_caches(vector_save_after=save_after())
    except Exception as e:
        logger.warning("fragment add for %r failed: %s", memory.id, e)
