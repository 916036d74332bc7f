"""Re-embedding a store with a new model, including resuming after a crash."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.embedders.protocol import Vectors
from embedmind.engine import commit as commit_path
from embedmind.policies import FragmentPolicy

reembed_module = importlib.import_module("embedmind.reembed")


def _store(path: Path, n: int) -> None:
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember_many([f"memory number {i} about topic{i % 7}" for i in range(n)])
        store.forget(store.recall("memory", k=1).ids[0])


def test_reembed_switches_the_model(tmp_path: Path) -> None:
    path = tmp_path / "r.mind"
    _store(path, 50)
    assert embedmind.reembed(path, HashingEmbedder(64), batch_size=8) == 49
    with pytest.raises(embedmind.EmbedderMismatchError):
        embedmind.Store.open(path, embedder=HashingEmbedder(32))
    with embedmind.Store.open(path, embedder=HashingEmbedder(64)) as store:
        assert store.stats().vectors == 49
        assert store.stats().embedder == "hashing-64"
        hit = store.recall("topic3", k=1, mode="vector")
        assert hit[0].memory.content.endswith("topic3")


def test_reembed_resumes_after_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.mind"
    _store(path, 40)
    calls = {"n": 0}
    real = reembed_module.embed_contents

    def flaky(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("killed mid-way")
        return real(*args, **kwargs)

    monkeypatch.setattr(reembed_module, "embed_contents", flaky)
    with pytest.raises(RuntimeError):
        embedmind.reembed(path, HashingEmbedder(64), batch_size=10)
    with pytest.raises(embedmind.ConflictError):  # another target while one is unfinished
        embedmind.reembed(path, HashingEmbedder(16), batch_size=10)
    monkeypatch.setattr(reembed_module, "embed_contents", real)
    assert embedmind.reembed(path, HashingEmbedder(64), batch_size=10) == 19  # the rest only
    with embedmind.Store.open(path, embedder=HashingEmbedder(64)) as store:
        assert store.stats().vectors == 39


# -- fragments are re-embedded too --------------------------------------------------------------

FRAGMENT_TEXTS = [
    "green tea grows in Assam",
    "coffee grows in Brazil",
    "cocoa comes from Ghana",
    "the river floods in spring",
    "snow on the mountain pass",
    "city lights at night",
]


class SaltedHashing(HashingEmbedder):
    """Another model with the same dimensions: every word lands in another bucket."""

    def __init__(self, dims: int = 32) -> None:
        super().__init__(dims)
        self.model_id = f"salted-hashing-{dims}"
        self.fingerprint = f"salted-{dims}"

    def _bucket(self, word: str) -> tuple[int, float]:
        return super()._bucket("salt:" + word)


def _fragment_store(
    path: Path, embedder: HashingEmbedder, records: int = 12
) -> dict[tuple[str, int], str]:
    """Records with text fragments (put explicitly and derived on write); their texts by locator."""
    policy = FragmentPolicy(chunker=_sentence_chunker, window=1, overlap=0)
    truth: dict[tuple[str, int], str] = {}
    with (
        pytest.MonkeyPatch.context() as patch,
        embedmind.Store.open(path, embedder=embedder, fragment_policy=policy) as store,
    ):
        patch.setattr(commit_path, "SAVE_INDEX_AFTER", 1)  # every fragment write saves the file
        for r in range(records):
            texts = [FRAGMENT_TEXTS[(r + j) % len(FRAGMENT_TEXTS)] + f" r{r}" for j in range(3)]
            content = ". ".join(texts)
            if r % 2:  # derived on write: one fragment per sentence
                store.remember(content, id=f"doc{r}")
                spans = _sentence_chunker(content, 1, 0)
                truth.update({(f"doc{r}", a): content[a:b] for a, b in spans})
            else:
                store.remember(content, id=f"doc{r}", namespace="explicit")
                items = [((100 * j, 100 * j + 50), t) for j, t in enumerate(texts)]
                store.fragments.put(f"doc{r}", items)
                truth.update({(f"doc{r}", 100 * j): t for j, t in enumerate(texts)})
    assert Path(f"{path}-fragments").is_file()
    return truth


def _sentence_chunker(text: str, window: int, overlap: int) -> list[tuple[int, int]]:
    spans, start = [], 0
    for part in text.split(". "):
        spans.append((start, start + len(part)))
        start += len(part) + 2
    return spans


def _assert_fragments_from(
    path: Path, embedder: HashingEmbedder, truth: dict[tuple[str, int], str]
) -> None:
    """Every fragment's vector is ``embedder``'s: query results equal brute force with it."""
    keys = list(truth)
    matrix = embedder.embed_documents([truth[key] for key in keys])
    with embedmind.Store.open(path, embedder=embedder) as store:
        assert store.fragments.fragment_count == len(truth)
        for query in ["tea", "coffee Brazil", "river spring", "city lights r3", "snow r7"]:
            sims = matrix @ embedder.embed_query(query)
            exact = dict(zip(keys, sims.tolist(), strict=True))
            hits = store.fragments.query(query, k=6)
            assert [h.score for h in hits] == pytest.approx(
                sorted(sims.tolist(), reverse=True)[:6], abs=2e-3
            ), query
            for hit in hits:
                assert hit.score == pytest.approx(
                    exact[(hit.record_id, hit.locator.start)], abs=2e-3
                )
        for (record, start), text in list(truth.items())[:10]:  # each fragment finds itself
            # (another may tie: in 32 buckets "r0" and "r4" can hash alike)
            found = {(h.record_id, h.locator.start): h.score for h in store.fragments.query(text)}
            assert found[(record, start)] == pytest.approx(1.0, abs=2e-3)


@pytest.mark.parametrize(
    "new_model", [HashingEmbedder(64), SaltedHashing(32)], ids=["other-dims", "same-dims"]
)
def test_reembed_re_embeds_fragments(tmp_path: Path, new_model: HashingEmbedder) -> None:
    path = tmp_path / "f.mind"
    old_model = HashingEmbedder(32)
    truth = _fragment_store(path, old_model)
    assert embedmind.reembed(path, new_model, batch_size=5) == 12
    assert not Path(f"{path}-fragments").exists(), "the old model's index file is gone"
    with embedmind.Store.open(path, embedder=None) as store, store._db.read() as conn:
        assert not conn.execute("SELECT * FROM index_files").fetchall(), "nothing registered"
    _assert_fragments_from(path, new_model, truth)


class Recording(HashingEmbedder):
    """The new model; it records the fragment texts it embeds and can die at the second batch."""

    def __init__(self, dims: int, fragments: set[str], die: bool = False) -> None:
        super().__init__(dims)
        self.fragments, self.die, self.embedded = fragments, die, list[str]()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        mine = [t for t in texts if t in self.fragments]
        if mine and self.embedded and self.die:
            raise RuntimeError("killed mid-way")
        self.embedded += mine
        return super().embed_documents(texts)


def test_reembed_resumes_in_the_fragments(tmp_path: Path) -> None:
    path = tmp_path / "f.mind"
    truth = _fragment_store(path, HashingEmbedder(32))
    dying = Recording(64, set(truth.values()), die=True)
    with pytest.raises(RuntimeError):
        embedmind.reembed(path, dying, batch_size=5)
    assert 0 < len(dying.embedded) < len(truth)
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        assert store.stats().embedder == "hashing-32", "the switch is the last step"
    with pytest.raises(embedmind.ConflictError):
        embedmind.reembed(path, HashingEmbedder(16))
    rest = Recording(64, set(truth.values()))
    assert embedmind.reembed(path, rest, batch_size=5) == 0  # the memories were done
    assert sorted(dying.embedded + rest.embedded) == sorted(truth.values()), "each one once"
    _assert_fragments_from(path, HashingEmbedder(64), truth)


def test_fragments_put_meanwhile_are_read_again_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "f.mind"
    truth = _fragment_store(path, HashingEmbedder(32))
    other = embedmind.Store.open(path, embedder=HashingEmbedder(32))  # another process
    fresh = {("doc2", 0): "fresh words about tea r2", ("doc2", 10): "brand new lines r2"}

    class PutsMeanwhile(HashingEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> Vectors:
            if truth[("doc2", 0)] in texts and not other._db.closed:
                other.fragments.put("doc2", [((s, s + 10), t) for (_, s), t in fresh.items()])
                other._db.close()
            return super().embed_documents(texts)

    embedmind.reembed(path, PutsMeanwhile(64), batch_size=2)
    truth = {key: text for key, text in truth.items() if key[0] != "doc2"} | fresh
    _assert_fragments_from(path, HashingEmbedder(64), truth)


def test_fragments_given_as_vectors_are_kept_unless_dropping_is_asked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "f.mind"
    truth = _fragment_store(path, HashingEmbedder(32))
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember("a vector-only document", id="given")
        store.fragments.put(
            "given", [((0, 5), [1.0] + [0.0] * 31), ((5, 9), [0.0, 1.0] + [0.0] * 30)]
        )
    with pytest.raises(
        embedmind.ConflictError, match=r"2 fragment\(s\) of 1 record\(s\) \('given'\)"
    ):
        embedmind.reembed(path, HashingEmbedder(64))
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:  # nothing changed
        assert store.fragments.fragment_count == len(truth) + 2
        with store._db.read() as conn:
            assert not conn.execute("SELECT * FROM meta WHERE key LIKE 'reembed.%'").fetchall()
    with caplog.at_level(logging.WARNING):
        assert embedmind.reembed(path, HashingEmbedder(64), drop_vector_fragments=True) == 13
    assert any("dropped 2 fragments" in r.getMessage() for r in caplog.records)
    _assert_fragments_from(path, HashingEmbedder(64), truth)
