"""embedmind beside the embedded stores a user would pick instead, in one run.

Same embedder (embedmind's MiniLM, vectors computed once and handed to every
engine), same corpus, same queries:

- LoCoMo dev (../shared/data/locomo) through each engine: recall@5/10 and
  hit@5/10 overall and per category; each conversation is its own scope.
- A synthetic chat corpus (--size): ingest throughput with precomputed
  vectors, query p50/p95, on-disk size.

Peers: Chroma (PersistentClient, vector search) and LanceDB (vector, and
hybrid with its full-text index). A missing or failing peer is reported as
skipped. Install them in the benchmark's own environment (the ``bench`` extra).

Usage: python scripts/bench_peers.py [--size 10000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import embedmind
from embedmind.benchmarks import locomo
from embedmind.benchmarks.corpus import iter_documents, make_queries
from embedmind.embedders.minilm import MiniLMEmbedder

DATA = Path(__file__).resolve().parents[1].parent / "shared/data/locomo/locomo-dev.json"
Searcher = Callable[[str, np.ndarray, str | None, int], list[str]]


class Embedmind:
    name = "embedmind (hybrid)"

    def __init__(self, root: Path, embedder: MiniLMEmbedder) -> None:
        self.store = embedmind.Store.open(root / "e.mind", embedder=embedder, synchronous="NORMAL")
        self.root = root

    def add(self, ids: list[str], texts: list[str], vectors: np.ndarray, scopes: list[str]) -> None:
        drafts = [
            embedmind.Draft(t, id=i, namespace=s, vector=v)
            for i, t, v, s in zip(ids, texts, vectors, scopes, strict=True)
        ]
        self.store.remember_many(drafts, batch_size=1_000)

    def search(self, text: str, vector: np.ndarray, scope: str | None, k: int) -> list[str]:
        return self.store.recall(text, k=k, namespace=scope, vector=vector).ids

    def close(self) -> None:
        self.store.close()


class Chroma:
    name = "chroma (vector)"

    def __init__(self, root: Path, embedder: MiniLMEmbedder) -> None:
        import chromadb

        self.client = chromadb.PersistentClient(path=str(root / "chroma"))
        self.collection = self.client.create_collection(
            "bench", embedding_function=None, metadata={"hnsw:space": "cosine"}
        )
        self.root = root

    def add(self, ids: list[str], texts: list[str], vectors: np.ndarray, scopes: list[str]) -> None:
        for start in range(0, len(ids), 4_000):
            end = start + 4_000
            self.collection.add(
                ids=ids[start:end],
                embeddings=vectors[start:end].tolist(),
                documents=texts[start:end],
                metadatas=[{"scope": s} for s in scopes[start:end]],
            )

    def search(self, text: str, vector: np.ndarray, scope: str | None, k: int) -> list[str]:
        where = {"scope": scope} if scope else None
        found = self.collection.query(query_embeddings=[vector.tolist()], n_results=k, where=where)
        return list(found["ids"][0])

    def close(self) -> None:
        pass


class Lance:
    name = "lancedb (vector)"
    hybrid = False

    def __init__(self, root: Path, embedder: MiniLMEmbedder) -> None:
        import lancedb

        self.db = lancedb.connect(str(root / "lance"))
        self.table: Any = None
        self.root = root

    def add(self, ids: list[str], texts: list[str], vectors: np.ndarray, scopes: list[str]) -> None:
        rows = [
            {"id": i, "text": t, "vector": v.tolist(), "scope": s}
            for i, t, v, s in zip(ids, texts, vectors, scopes, strict=True)
        ]
        self.table = self.db.create_table("bench", data=rows)
        if self.hybrid:
            self.table.create_fts_index("text")

    def search(self, text: str, vector: np.ndarray, scope: str | None, k: int) -> list[str]:
        if self.hybrid:
            query = self.table.search(query_type="hybrid").vector(vector.tolist()).text(text)
        else:
            query = self.table.search(vector.tolist()).metric("cosine")
        if scope:
            query = query.where(f"scope = '{scope}'", prefilter=True)
        return [row["id"] for row in query.limit(k).to_list()]

    def close(self) -> None:
        pass


class LanceHybrid(Lance):
    name = "lancedb (hybrid, FTS)"
    hybrid = True


ENGINES = [Embedmind, Chroma, Lance, LanceHybrid]


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_locomo(embedder: MiniLMEmbedder, workdir: Path) -> dict[str, Any]:
    if not DATA.exists():
        return {"skipped": f"LoCoMo data not found at {DATA}"}
    data = locomo.load(DATA)
    ids = [d.id or "" for d in data.drafts]
    texts = [d.content for d in data.drafts]
    scopes = [d.namespace for d in data.drafts]
    vectors = embedder.embed_documents(texts)
    qvecs = {q.text: embedder.embed_query(q.text) for q in data.questions}
    results: dict[str, Any] = {}
    for engine_cls in ENGINES:
        root = Path(tempfile.mkdtemp(dir=workdir))
        try:
            engine = engine_cls(root, embedder)
            engine.add(ids, texts, vectors, scopes)
            scores: dict[str, dict[str, float]] = {}
            for q in data.questions:
                found = engine.search(q.text, qvecs[q.text], q.namespace, 10)
                for group in ("overall", locomo.CATEGORIES[q.category]):
                    row = scores.setdefault(group, {"questions": 0.0})
                    row["questions"] += 1
                    for k in locomo.KS:
                        hit = len(q.evidence & set(found[:k]))
                        row[f"recall@{k}"] = row.get(f"recall@{k}", 0.0) + hit / len(q.evidence)
                        row[f"hit@{k}"] = row.get(f"hit@{k}", 0.0) + (1.0 if hit else 0.0)
            results[engine_cls.name] = {
                g: {m: (v if m == "questions" else v / r["questions"]) for m, v in r.items()}
                for g, r in scores.items()
            }
            engine.close()
        except Exception as e:  # a missing or broken peer is reported, not fatal
            results[engine_cls.name] = {"skipped": f"{type(e).__name__}: {e}"}
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return results


def run_synthetic(
    embedder: MiniLMEmbedder, size: int, queries: int, workdir: Path
) -> dict[str, Any]:
    texts = list(iter_documents(size))
    started = time.perf_counter()
    vectors = embedder.embed_documents(texts)
    embed_rate = size / (time.perf_counter() - started)
    ids = [f"d{i}" for i in range(size)]
    scopes = ["default"] * size
    qs = make_queries(queries)
    qv = [embedder.embed_query(q) for q in qs]
    results: dict[str, Any] = {"embedder texts/s": embed_rate}
    for engine_cls in ENGINES:
        root = Path(tempfile.mkdtemp(dir=workdir))
        try:
            engine = engine_cls(root, embedder)
            started = time.perf_counter()
            engine.add(ids, texts, vectors, scopes)
            ingest = size / (time.perf_counter() - started)
            for q, v in zip(qs[:10], qv[:10], strict=True):
                engine.search(q, v, None, 10)  # warm
            lat = []
            for q, v in zip(qs, qv, strict=True):
                started = time.perf_counter()
                engine.search(q, v, None, 10)
                lat.append(time.perf_counter() - started)
            engine.close()
            ms = np.asarray(lat) * 1000
            results[engine_cls.name] = {
                "ingest docs/s": ingest,
                "p50 ms": float(np.percentile(ms, 50)),
                "p95 ms": float(np.percentile(ms, 95)),
                "disk MB": disk_bytes(root) / 1e6,
            }
        except Exception as e:
            results[engine_cls.name] = {"skipped": f"{type(e).__name__}: {e}"}
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return results


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("embedmind", "chromadb", "lancedb", "numpy", "onnxruntime", "usearch"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    report: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "cores": os.cpu_count(),
            "platform": platform.platform(),
        },
        "versions": versions(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        report["locomo"] = run_locomo(embedder, Path(tmp))
        report["synthetic"] = run_synthetic(embedder, args.size, args.queries, Path(tmp))
    print(json.dumps(report["versions"]))
    print("\nLoCoMo dev (same MiniLM vectors everywhere)")
    print(f"{'engine':<24} {'recall@5':>9} {'recall@10':>9} {'hit@5':>7} {'hit@10':>7}")
    for name, groups in report["locomo"].items():
        if "overall" in groups:
            o = groups["overall"]
            print(
                f"{name:<24} {o['recall@5']:>9.3f} {o['recall@10']:>9.3f} {o['hit@5']:>7.3f} {o['hit@10']:>7.3f}"
            )
        else:
            print(f"{name:<24} {groups}")
    print(f"\nSynthetic chat corpus, {args.size:,} docs, {args.queries} queries")
    print(f"{'engine':<24} {'ingest/s':>9} {'p50 ms':>8} {'p95 ms':>8} {'disk MB':>8}")
    for name, row in report["synthetic"].items():
        if isinstance(row, dict) and "p50 ms" in row:
            print(
                f"{name:<24} {row['ingest docs/s']:>9.0f} {row['p50 ms']:>8.2f} {row['p95 ms']:>8.2f} {row['disk MB']:>8.1f}"
            )
        elif isinstance(row, dict):
            print(f"{name:<24} {row}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
