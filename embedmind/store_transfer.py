"""Export and import as JSON Lines: backups, migrations, moving memories between stores.

The first line is a header naming the format and the embedding model; then
one line per live memory (every stored field, times as integer microseconds,
its entities and outgoing relations, and optionally its vectors as
little-endian float32 in base64), then one line per namespace link. Lines are
streamed both ways. Import keeps ids, timestamps, supersession and link
``created_at``; it is idempotent (an id that exists is overwritten with the
same values); relations are added once every memory of the file is in. A file
whose vectors come from another model is refused unless ``reembed=True``,
which drops its vectors and embeds with the store's model.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tqdm.auto import tqdm

from embedmind.drafts import Prepared, fingerprint, metadata_to_json
from embedmind.embedders.adapt import identity
from embedmind.embedders.protocol import Embedder
from embedmind.errors import EmbedderMismatchError, InvalidInputError
from embedmind.lexical.index import LexicalIndex
from embedmind.namespaces import normalize_namespace
from embedmind.storage import graph, lifecycle, records
from embedmind.storage import vectors as vector_rows
from embedmind.storage.database import Database
from embedmind.vectors.embedding import Embedded, embed_contents
from embedmind.writes import apply_batch

FORMAT = "embedmind-jsonl"
VERSION = 1
_PAGE = 500


class TransferMethods:
    """Mixed into :class:`embedmind.Store`."""

    _db: Database
    _lexical: LexicalIndex
    _embedder: Embedder | None

    def export_jsonl(
        self,
        destination: str | Path | IO[str],
        *,
        include_vectors: bool = False,
        show_progress: bool = False,
    ) -> int:
        """Write every live memory and link as JSON Lines, streaming.

        Returns:
            How many memories were written.
        """
        progress = tqdm(disable=not show_progress, unit="memory", desc="export")
        with _text_sink(destination) as out, progress as bar:
            with self._db.read() as conn:
                recorded = vector_rows.read_identity(conn) or None
            header = {"type": "header", "format": FORMAT, "version": VERSION, "embedder": recorded}
            out.write(_line(header))
            written, after = 0, 0
            while True:
                with self._db.read() as conn:
                    page = records.export_page(conn, after, _PAGE)
                    lines = [self._export_memory(conn, item, include_vectors) for item in page]
                for line in lines:
                    out.write(line)
                written += len(page)
                bar.update(len(page))
                if len(page) < _PAGE:
                    break
                after = page[-1]["key"]
            with self._db.read() as conn:
                for src, dst, tiers, note, created in lifecycle.links(conn, None):
                    link = {
                        "src": src,
                        "dst": dst,
                        "tiers": tiers,
                        "note": note,
                        "created_at": created,
                    }
                    out.write(_line({"type": "link", **link}))
        return written

    def _export_memory(self, conn: Any, item: dict[str, Any], include_vectors: bool) -> str:
        key = item.pop("key")
        item["entities"] = graph.entity_names(conn, key)
        item["relations"] = [list(edge) for edge in graph.outgoing(conn, key)]
        if include_vectors:
            item["vectors"] = [
                {"start": s, "end": e, "f32le": base64.b64encode(blob).decode("ascii")}
                for s, e, blob in vector_rows.rows_of(conn, key)
            ]
        return _line({"type": "memory", **item})

    def import_jsonl(
        self,
        source: str | Path | IO[str],
        *,
        reembed: bool = False,
        show_progress: bool = False,
    ) -> int:
        """Load memories and links written by :meth:`export_jsonl`.

        Returns:
            How many memories were read.

        Raises:
            InvalidInputError: When the file is not an embedmind export.
            EmbedderMismatchError: When its vectors come from another model and
                ``reembed`` is false.
        """
        with (
            _text_source(source) as lines,
            tqdm(disable=not show_progress, unit="memory", desc="import") as bar,
        ):
            header = json.loads(next(lines, "{}") or "{}")
            if header.get("format") != FORMAT or header.get("version") != VERSION:
                raise InvalidInputError("source", "not an embedmind-jsonl export (version 1)")
            reuse = self._check_model(header.get("embedder"), reembed)
            relations: list[tuple[str, str, str, int]] = []
            batch: list[dict[str, Any]] = []
            count = 0
            for raw in lines:
                item = json.loads(raw)
                if item.get("type") == "memory":
                    batch.append(item)
                    relations += [(item["id"], k, t, c) for k, t, c in item.get("relations", [])]
                    count += 1
                    bar.update(1)
                    if len(batch) == _PAGE:
                        self._import_batch(batch, reuse)
                        batch = []
                elif item.get("type") == "link":
                    self._import_batch(batch, reuse)
                    batch = []
                    self._import_link(item)
            self._import_batch(batch, reuse)
            self._import_relations(relations)
        return count

    def _check_model(self, recorded: dict[str, str] | None, reembed: bool) -> bool:
        """Whether the file's vectors can be reused as they are."""
        if self._embedder is None or not recorded:
            return False
        mine = identity(self._embedder)
        if recorded == mine:
            return True
        if not reembed:
            raise EmbedderMismatchError("<import file>", recorded, mine)
        return False

    def _import_batch(self, batch: list[dict[str, Any]], reuse_vectors: bool) -> None:
        if not batch:
            return
        prepared = [_prepared(item) for item in batch]
        embedded: list[Embedded | None] = [None] * len(batch)
        if self._embedder is not None:
            given: list[Embedded | None] = [
                _vectors(item, self._embedder.dims) if reuse_vectors else None for item in batch
            ]
            missing = [i for i, e in enumerate(given) if e is None]
            fresh = embed_contents(
                self._embedder, [prepared[i].content for i in missing], [None] * len(missing)
            )
            for i, vectors in zip(missing, fresh, strict=True):
                given[i] = vectors
            embedded = given
        with self._db.write() as conn:
            apply_batch(conn, self._lexical, prepared, embedded)
            found = records.find_many(conn, [p.id for p in prepared])
            for item in batch:
                records.restore_fields(conn, found[item["id"]].key, item)

    def _import_relations(self, relations: list[tuple[str, str, str, int]]) -> None:
        if not relations:
            return
        with self._db.write() as conn:
            found = records.find_many(
                conn, sorted({r[0] for r in relations} | {r[2] for r in relations})
            )
            rows = [
                (found[src].key, kind, found[dst].key, created)
                for src, kind, dst, created in relations
                if src in found and dst in found
            ]
            graph.add_relation_rows(conn, rows)

    def _import_link(self, item: dict[str, Any]) -> None:
        with self._db.write() as conn:
            lifecycle.put_link(
                conn,
                normalize_namespace(item["src"]),
                normalize_namespace(item["dst"]),
                item.get("tiers"),
                str(item.get("note", "")),
                int(item["created_at"]),
            )


def _prepared(item: dict[str, Any]) -> Prepared:
    content = item["content"]
    if not isinstance(content, str):
        raise InvalidInputError("content", f"memory {item.get('id')!r} has no text content")
    return Prepared(
        id=item["id"],
        namespace=normalize_namespace(item["namespace"]),
        content=content,
        metadata_json=metadata_to_json(item.get("metadata") or {}),
        tags=tuple(item.get("tags") or ()),
        tier=item["tier"],
        level=item["level"],
        agent=item.get("agent", ""),
        session_id=item.get("session_id"),
        created_at=int(item["created_at"]),
        updated_at=int(item["updated_at"]),
        valid_from=int(item["valid_from"]),
        valid_to=item.get("valid_to"),
        expires_at=item.get("expires_at"),
        confidence=float(item["confidence"]),
        fingerprint=item.get("fingerprint") or fingerprint(content),
        entities=tuple(item.get("entities") or ()),
    )


def _vectors(item: dict[str, Any], dims: int) -> Embedded | None:
    import numpy as np

    rows = item.get("vectors")
    if not rows:
        return None
    spans = [(int(r["start"]), int(r["end"])) for r in rows]
    matrix = np.stack(
        [np.frombuffer(base64.b64decode(r["f32le"]), dtype="<f4").astype(np.float32) for r in rows]
    )
    if matrix.shape[1] != dims:
        raise InvalidInputError("vectors", f"memory {item['id']!r} has vectors of another size")
    return Embedded(spans, matrix)


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


@contextmanager
def _text_sink(destination: str | Path | IO[str]) -> Iterator[IO[str]]:
    if isinstance(destination, str | Path):
        with open(destination, "w", encoding="utf-8") as handle:
            yield handle
    else:
        yield destination


@contextmanager
def _text_source(source: str | Path | IO[str]) -> Iterator[Iterator[str]]:
    if isinstance(source, str | Path):
        with open(source, encoding="utf-8") as handle:
            yield (line for line in handle if line.strip())
    else:
        yield (line for line in source if line.strip())
