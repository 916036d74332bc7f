"""A schema of memories, each with a ``bucket`` in its metadata and a unit vector (or two).

The vector channel's tests filter on ``bucket`` to admit a chosen share of the
memories and compare the channel with brute force over these rows. The rows go in by
``COPY`` and the HNSW index is built after them (ten times faster than inserting
into it), then ``ANALYZE`` gives the planner its statistics.
"""

from __future__ import annotations

import numpy as np
import psycopg

from embedmind.backend.postgres import schema
from embedmind.backend.postgres.vector_channel import vector_literal


def load(
    c: psycopg.Connection,
    schema_name: str,
    vectors: np.ndarray,
    buckets: np.ndarray,
    extra: tuple[np.ndarray, np.ndarray] | None = None,
) -> None:
    """Migrate ``schema_name`` and fill it: memory ``i`` (key ``i + 1``) in ``buckets[i]``.

    Args:
        c: An autocommit connection.
        schema_name: The schema to create.
        vectors: One unit vector per memory, its span ``[0, 1)``.
        buckets: Each memory's ``bucket``.
        extra: ``(memory indexes, vectors)``: a second vector (span ``[1, 2)``) for those.
    """
    schema.migrate(c, schema_name)
    with c.transaction(), c.cursor() as cur:
        with cur.copy(
            "COPY memories (id, namespace, content, metadata, tier, level, created_at, "
            "updated_at, valid_from, fingerprint) FROM STDIN"
        ) as copy:
            for i, bucket in enumerate(buckets.tolist()):
                metadata = f'{{"bucket": {int(bucket)}}}'
                row = (f"m{i}", "ns", f"memory {i}", metadata, "semantic", "explicit")
                copy.write_row((*row, i, i, i, f"f{i}"))
        with cur.copy('COPY memory_vectors (key, start, "end", embedding) FROM STDIN') as copy:
            for i, vector in enumerate(vectors):
                copy.write_row((i + 1, 0, 1, vector_literal(vector)))
            if extra is not None:
                for i, vector in zip(extra[0].tolist(), extra[1], strict=True):
                    copy.write_row((i + 1, 1, 2, vector_literal(vector)))
    c.execute("SET maintenance_work_mem = '256MB'")
    with c.transaction():
        schema.record_dimensions(c, vectors.shape[1])  # the HNSW index, over the loaded rows
    c.execute("ANALYZE")
