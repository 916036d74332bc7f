"""Re-embedding a store with another model, resumable after a crash.

Memories are re-embedded in key order, one transaction per batch; each batch
replaces its memories' vectors and advances a cursor stored in the file, so a
run that is killed resumes where it stopped. The model identity switches in
the last transaction, and the derived index files are dropped (the next open
rebuilds them). Run it while no other process recalls by vector: until the
switch, the store holds vectors of both models.
"""

from __future__ import annotations

import os

from tqdm.auto import tqdm

from embedmind.embedders.adapt import DEFAULT, identity, resolve
from embedmind.errors import ConflictError, InvalidInputError
from embedmind.plugins import resolve_embedder
from embedmind.storage import fileio, records
from embedmind.storage import vectors as vector_rows
from embedmind.storage.database import Database, normalize_path
from embedmind.vectors.embedding import embed_contents

_TARGET = "reembed.target"
_CURSOR = "reembed.cursor"


def reembed(
    path: str | os.PathLike[str],
    embedder: object = DEFAULT,
    *,
    batch_size: int = 256,
    show_progress: bool = False,
) -> int:
    """Re-embed every live memory of the store at ``path`` with ``embedder``.

    Args:
        path: The store file.
        embedder: The new model (default: the embedded all-MiniLM-L6-v2).
        batch_size: Memories per transaction.
        show_progress: Show a progress bar.

    Returns:
        How many memories were re-embedded in this run.

    Raises:
        InvalidInputError: When ``embedder`` is ``None`` or ``batch_size`` invalid.
        ConflictError: When an unfinished re-embed towards another model exists.
    """
    model = resolve(resolve_embedder(embedder))
    if model is None:
        raise InvalidInputError("embedder", "re-embedding needs an embedder")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInputError("batch_size", "expected a positive int")
    target = identity(model)
    wanted = repr(sorted(target.items()))
    database = Database(normalize_path(path))
    done = 0
    try:
        with database.write() as conn:
            started = vector_rows.meta_get(conn, _TARGET)
            if started is not None and started != wanted:
                raise ConflictError(
                    str(path), f"an unfinished re-embed towards another model exists ({started})"
                )
            vector_rows.meta_set(conn, _TARGET, wanted)
            cursor = int(vector_rows.meta_get(conn, _CURSOR) or 0)
            total = records.live_count(conn)
        with tqdm(total=total, disable=not show_progress, unit="memory") as bar:
            while True:
                with database.read() as conn:
                    batch = records.contents_after(conn, cursor, batch_size)
                if not batch:
                    break
                embedded = embed_contents(model, [c for _, c in batch], [None] * len(batch))
                with database.write() as conn:
                    for (key, _), vectors in zip(batch, embedded, strict=True):
                        vector_rows.remove_memory(conn, key)
                        vector_rows.add(conn, key, vectors.spans, vectors.blobs())
                    cursor = batch[-1][0]
                    vector_rows.meta_set(conn, _CURSOR, str(cursor))
                done += len(batch)
                bar.update(len(batch))
        with database.write() as conn:
            vector_rows.write_identity(conn, target)
            vector_rows.forget_index_files(conn)
            vector_rows.meta_set(conn, _TARGET, None)
            vector_rows.meta_set(conn, _CURSOR, None)
        if database.path != ":memory:":
            fileio.remove_quietly(database.path + "-vectors")
    finally:
        database.close()
    return done
