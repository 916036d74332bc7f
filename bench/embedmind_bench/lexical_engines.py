"""Adapters that give every lexical engine the same build/search interface.

Each adapter indexes documents keyed by their position in the corpus and
answers a query with the positions of its top ``k`` documents, best first,
so results from different engines can be compared key by key. The timed
call always covers the whole path from query text to keys, because that is
what a caller pays. Optional peers are imported lazily: a missing one is
reported as unavailable, never a crash.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import apsw

# Rows per write transaction; large enough that commit cost is negligible.
BATCH = 10_000
_TERM = re.compile(r"\w+")

ProgressFn = Callable[[int], object]


class LexicalEngine(Protocol):
    """What the benchmark needs from an engine."""

    name: str
    settings: dict[str, Any]

    def build(self, docs: Sequence[str], progress: ProgressFn) -> None:
        """Index ``docs``, keyed by position, calling ``progress(n)`` as it goes."""

    def search(self, query: str, k: int) -> list[int]:
        """Return the keys of the top ``k`` documents for ``query``, best first."""

    def close(self) -> None:
        """Release files and memory."""


def query_terms(query: str) -> list[str]:
    """Split a question into distinct lower-case word terms, in order.

    Args:
        query: Natural-language text.

    Returns:
        The terms, so no query syntax from the text reaches an engine.

    Example:
        >>> query_terms("When did John, john's friend, call?")
        ['when', 'did', 'john', 's', 'friend', 'call']
    """
    return list(dict.fromkeys(term.lower() for term in _TERM.findall(query)))


def _batches(docs: Sequence[str]) -> Callable[[], list[tuple[int, Sequence[str]]]]:
    """Return a function listing ``(start, slice)`` batches of ``docs``."""
    return lambda: [(i, docs[i : i + BATCH]) for i in range(0, len(docs), BATCH)]


class Fts5Engine:
    """SQLite FTS5 with the porter tokenizer; an OR of quoted terms, by rank."""

    name = "fts5"

    def __init__(self, workdir: Path) -> None:
        self.settings: dict[str, Any] = {
            "tokenize": "porter unicode61",
            "query": "OR of quoted terms, ORDER BY rank",
            "synchronous": "NORMAL",
            "optimize_after_build": True,
        }
        self._db = apsw.Connection(str(workdir / "fts5.db"))
        self._db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(content, tokenize='porter unicode61')"
        )

    def build(self, docs: Sequence[str], progress: ProgressFn) -> None:
        """Insert every document, then merge the index into one b-tree."""
        for start, batch in _batches(docs)():
            rows = ((start + i + 1, text) for i, text in enumerate(batch))
            with self._db:
                self._db.executemany("INSERT INTO docs(rowid, content) VALUES (?, ?)", rows)
            progress(len(batch))
        # A long-lived index converges towards merged segments; optimising
        # measures that steady state instead of a fresh pile of segments.
        self._db.execute("INSERT INTO docs(docs) VALUES ('optimize')")

    def search(self, query: str, k: int) -> list[int]:
        """Run the OR query and return 0-based keys."""
        terms = query_terms(query)
        if not terms:
            return []
        match = " OR ".join(f'"{term}"' for term in terms)
        sql = "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT ?"
        return [row[0] - 1 for row in self._db.execute(sql, (match, k))]

    def close(self) -> None:
        """Close the connection."""
        self._db.close()


class TantivyEngine:
    """tantivy with its English stemming tokenizer; an OR of the terms."""

    name = "tantivy"

    def __init__(self, workdir: Path) -> None:
        self._tantivy = importlib.import_module("tantivy")
        self.settings: dict[str, Any] = {"tokenizer": self._tokenizer(), "query": "OR of terms"}
        builder = self._tantivy.SchemaBuilder()
        builder.add_integer_field("key", fast=True)
        builder.add_text_field("body", tokenizer_name=self._tokenizer())
        path = workdir / "tantivy"
        path.mkdir()
        self._index = self._tantivy.Index(builder.build(), path=str(path))
        self._register(self._index)
        self._searcher: Any = None

    def _tokenizer(self) -> str:
        """Name the analyzer of the text field."""
        return "en_stem"

    def _register(self, index: Any) -> None:
        """Register custom analyzers; the built-in ``en_stem`` needs none."""

    def build(self, docs: Sequence[str], progress: ProgressFn) -> None:
        """Add every document, commit, and wait for segment merges."""
        writer = self._index.writer(heap_size=256_000_000)
        document = self._tantivy.Document
        for start, batch in _batches(docs)():
            for i, text in enumerate(batch):
                writer.add_document(document(key=start + i, body=text))
            progress(len(batch))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()
        self._searcher = self._index.searcher()

    def search(self, query: str, k: int) -> list[int]:
        """Parse the terms as a disjunction, search top-k, read keys from the fast field."""
        terms = query_terms(query)
        if not terms:
            return []
        parsed = self._index.parse_query(" ".join(terms), ["body"])
        # count=False lets tantivy skip blocks (block-max WAND) instead of
        # visiting every match just to count them.
        hits = self._searcher.search(parsed, limit=k, count=False).hits
        keys = self._searcher.fast_field_values("key", [address for _, address in hits])
        return [int(key) for key in keys]

    def close(self) -> None:
        """Drop the searcher and index handles."""
        self._searcher = None


class TantivyStopEngine(TantivyEngine):
    """tantivy that also drops embedmind's stop words, to compare like with like.

    embedmind drops English stop words, so its queries score fewer terms
    than plain tantivy's; this variant shows how much of a gap that alone
    explains. It falls back to tantivy's own English list if embedmind's
    analyzer cannot be imported.
    """

    name = "tantivy_stop"

    def _tokenizer(self) -> str:
        return "en_stop_stem"

    def _register(self, index: Any) -> None:
        tantivy = self._tantivy
        try:
            words = sorted(importlib.import_module("embedmind.lexical.analyzer").STOP_WORDS)
            stop, source = tantivy.Filter.custom_stopword(words), "embedmind"
        except (ImportError, AttributeError):
            stop, source = tantivy.Filter.stopword("english"), "tantivy english"
        analyzer = (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.lowercase())
            .filter(stop)
            .filter(tantivy.Filter.stemmer("english"))
            .build()
        )
        index.register_tokenizer(self._tokenizer(), analyzer)
        self.settings["stop_words"] = source


class Bm25sEngine:
    """bm25s (Lucene BM25, k1 = 1.2, b = 0.75) with PyStemmer and English stop words."""

    name = "bm25s"

    def __init__(self, workdir: Path) -> None:
        del workdir  # bm25s indexes in memory
        self._bm25s = importlib.import_module("bm25s")
        stemmer = importlib.import_module("Stemmer").Stemmer("english")
        self._stem = stemmer.stemWords
        self.settings: dict[str, Any] = {"method": "lucene", "k1": 1.2, "b": 0.75}
        self._retriever: Any = None
        self._size = 0

    def _tokenize(self, texts: list[str], *, ids: bool) -> Any:
        return self._bm25s.tokenize(
            texts, stopwords="en", stemmer=self._stem, return_ids=ids, show_progress=False
        )

    def build(self, docs: Sequence[str], progress: ProgressFn) -> None:
        """Tokenize and index the whole corpus at once (bm25s has no incremental add)."""
        self._retriever = self._bm25s.BM25(k1=1.2, b=0.75)
        self._retriever.index(self._tokenize(list(docs), ids=True), show_progress=False)
        self._size = len(docs)
        progress(len(docs))

    def search(self, query: str, k: int) -> list[int]:
        """Retrieve top-k and drop zero-score padding."""
        tokens = self._tokenize([query], ids=False)
        if not tokens[0] or self._size == 0:
            return []
        keys, scores = self._retriever.retrieve(tokens, k=min(k, self._size), show_progress=False)
        return [int(key) for key, score in zip(keys[0], scores[0], strict=True) if score > 0]

    def close(self) -> None:
        """Free the index."""
        self._retriever = None


class EmbedmindEngine:
    """The engine under test: a text-only store, ``recall(mode="text")``."""

    name = "embedmind"

    def __init__(self, workdir: Path) -> None:
        module = importlib.import_module("embedmind")
        self.settings: dict[str, Any] = {"embedder": None, "synchronous": "NORMAL"}
        self._path = path = str(workdir / "embedmind.db")
        self._store = module.Store.open(path, embedder=None, synchronous="NORMAL")

    def build(self, docs: Sequence[str], progress: ProgressFn) -> None:
        """Remember every document, one transaction per batch."""
        for start, batch in _batches(docs)():
            items = ({"id": str(start + i), "content": text} for i, text in enumerate(batch))
            self._store.remember_many(items, batch_size=BATCH)
            progress(len(batch))
        self.settings["lexical_index_bytes"] = self._lexical_bytes()

    def _lexical_bytes(self) -> int:
        """Bytes of the BM25 index's own tables and indexes (SQLite's ``dbstat``).

        The file also holds the records (content, metadata, their indexes),
        which tantivy's index here does not store; this is the like-for-like size.
        """
        conn = apsw.Connection(self._path, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            row = conn.execute(
                "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'lex%' "
                "OR name LIKE 'sqlite_autoindex_lex%'"
            ).fetchone()
        finally:
            conn.close()
        return int(row[0]) if row and row[0] else 0

    def search(self, query: str, k: int) -> list[int]:
        """Recall in text mode; ids are the documents' keys."""
        return [int(hit.id) for hit in self._store.recall(query, mode="text", k=k)]

    def close(self) -> None:
        """Record the blocks scored per query (block-max pruning), then close the store."""
        tally = self._store._lexical.tally  # the engine's own counter, for this report only
        if tally.queries:
            self.settings["blocks_per_query"] = {
                "scored": tally.scored / tally.queries,
                "skipped": tally.skipped / tally.queries,
                "queries": tally.queries,
            }
        self._store.close()


ENGINES: dict[str, Callable[[Path], LexicalEngine]] = {
    "fts5": Fts5Engine,
    "tantivy": TantivyEngine,
    "tantivy_stop": TantivyStopEngine,
    "bm25s": Bm25sEngine,
    "embedmind": EmbedmindEngine,
}
_REQUIRES = {
    "fts5": "apsw",
    "tantivy": "tantivy",
    "tantivy_stop": "tantivy",
    "bm25s": "bm25s",
    "embedmind": "embedmind",
}
DEFAULT_ENGINES = ("fts5", "tantivy", "bm25s", "embedmind")


def unavailable_reason(name: str) -> str | None:
    """Say why engine ``name`` cannot run here, or ``None`` when it can.

    Args:
        name: A key of ``ENGINES``.

    Returns:
        A short human reason such as ``"bm25s not installed"``.
    """
    try:
        module = importlib.import_module(_REQUIRES[name])
        if name == "bm25s":
            importlib.import_module("Stemmer")
    except ImportError as exc:
        return f"{exc.name or _REQUIRES[name]} not installed"
    except Exception as exc:  # the engine under test may be mid-edit
        return f"import failed: {type(exc).__name__}: {exc}"
    if name == "embedmind" and not hasattr(module, "Store"):
        return "embedmind.Store does not exist yet"
    return None
