"""A store written by embedmind ``33de530`` opens (migrates) and answers as recorded.

``tests/fixtures/format_33de530/store.mind`` was written by the old code through
its public API (``scripts/make_format_fixture.py``, see the README beside it).
Every test opens a COPY with the current code and asks it what
``make_format_fixture.answers`` asks — only the public API and the CLI, so the
check holds across any reorganisation of the package:

- the answers must equal ``answers_current.json`` exactly (scores within
  float rounding): any change of the file format, the migration or an answer
  fails here; regenerate with ``record --as current`` only for an intended change;
- and they must equal ``answers_old.json`` (what ``33de530`` itself answered)
  except where the semantics changed on purpose since, each such difference
  listed below with its reason — fusion's is checked by rebuilding the new
  fusion from the old code's own per-channel rankings.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "format_33de530"
STORE = FIXTURE / "store.mind"
SHA256 = "fed4558729cd0daed36b8d7440c9736985adcf2abcf9ce49d9db2621671afb24"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_format_fixture", ROOT / "scripts" / "make_format_fixture.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIX = _script()
OLD: dict[str, Any] = json.loads((FIXTURE / "answers_old.json").read_text("utf-8"))
CURRENT: dict[str, Any] = json.loads((FIXTURE / "answers_current.json").read_text("utf-8"))

# -- what changed on purpose since 33de530 ------------------------------------------

FUSION = (
    "7670ebf/3cac26c: recall fuses each channel's first 20 candidates with RRF constant 1 "
    "whatever k (it fused 2k with RRF 60): rebuilt from the old per-channel rankings"
)
ORACLE_RECALLS = {name for name, _, kwargs in FIX.RECALLS if FIX._reconstructible(kwargs)}
"""Recalls checked against the new fusion rebuilt from 33de530's own channel rankings."""

CHANGED = {
    "open/schema_version": "0877b1f (5: memories_by_session), 29ba990 (6: aliases), 7 (compact postings), 8 "
    "(the metadata index), 9 (the fingerprint prefix index), 10 (partial indexes) and 11 (the "
    "fingerprint index's 4-byte key) migrate it",
    "reopen/schema_version": "the migrated file stays at the current version",
    "stats": "schema_version is the migrated one; missing_vectors and session_context are new",
    "stats/later": "as stats",
    "export": "15f84e8: the export header carries session_context (false: an old store)",
    "cli/export": "as export",
    "cli/stats": "as stats (the CLI prints every Stats field)",
    "cli/get-missing": "630293d: a missing id is an error on stderr, no longer stdout; under "
    "--json it is a JSON object naming the error's type (issue 49)",
    "cli/recall-hybrid": "issue 50: hybrid scores are probabilities (the CLI's JSON holds the hits)",
    "recall/expand-related/hybrid": "issue 50: hybrid ranks by probability; the appended "
    "neighbours follow the new hits",
    "recall/expand-related": "issue 50: a text-mode hit's score is its probability (the "
    "BM25 is its text channel's raw score); the appended neighbours keep 0",
    "cli/recall-text": "issue 50: as recall/expand-related, in the CLI's JSON",
    "cli/recall-where": "issue 50: a vector-mode hit's score is its probability (the cosine "
    "is its vector channel's raw score), in the CLI's JSON",
    "recall/rerank/reorder": "3cac26c: rerank_alpha reranks a pool of 40 whatever k (was 4k)",
    "fragments/buffer": "262ea5c: equal scores (here the zero-cosine tail) are ordered by key, "
    "so a deeper search cannot change the first hits",
}
"""Answers that differ from 33de530's on purpose, with why (each must really differ)."""

NEW = {
    "recall/temporal/birthday": "6797b39: recall(temporal=True) is new",
    "session-context-on": "15f84e8: Store.open(session_context=True) re-indexes an old store",
    "doctor-verify": "fe49b7d: doctor --verify is new (checked by its own test)",
}
"""Answers only the current code gives."""

MISSING_VECTORS = re.compile(r"^\d+ memor(y|ies) in scope ha(s|ve) no vector ")
"""1ba2bbf: recall notes the memories in scope written without a vector (new in degraded)."""


NEW_CHANNEL_FIELDS = {
    "via_context": "aed20bc: the terms matched through session context (explain only)",
    "via_widening": "e3a7e11: the widened sub-query a candidate came from (widen only)",
}
"""ChannelScore fields added since (empty here); the CLI's JSON prints every field."""


def _without_new_notes(answer: Any) -> Any:
    """An answer without what later versions add to it when nothing changed."""
    if isinstance(answer, dict) and isinstance(answer.get("json"), dict):
        return {**answer, "json": _without_new_notes(answer["json"])}
    if not isinstance(answer, dict) or "degraded" not in answer:
        return answer
    notes = [n for n in answer["degraded"] if not MISSING_VECTORS.match(n)]
    hits = [
        {
            **hit,
            "channels": {
                name: {k: v for k, v in c.items() if not (k in NEW_CHANNEL_FIELDS and not v)}
                for name, c in hit["channels"].items()
            },
        }
        for hit in answer["hits"]
    ]
    return {**answer, "degraded": notes, "hits": hits}


def _rrf(lists: list[list[list[Any]]], constant: int = 1) -> list[tuple[str, float]]:
    """Reciprocal rank fusion as recall documents it: tied scores share a rank, ties keep
    the order first seen."""
    scores: dict[str, float] = {}
    for ranked in lists:
        rank, previous = 0, None
        for position, (item, score) in enumerate(ranked, start=1):
            if score != previous:
                rank, previous = position, score
            scores[item] = scores.get(item, 0.0) + 1.0 / (constant + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))


def _created(memory_id: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(OLD[f"get/{memory_id}"]["created_at"]).timestamp()


def _fusion_from_old(name: str, kwargs: dict[str, Any]) -> list[tuple[str, float]]:
    """The new fusion of one recall, computed from the old code's per-channel rankings."""
    k, mode = kwargs.get("k", 8), kwargs.get("mode", "hybrid")
    depths = [20] if k <= 20 else [20, 40]
    channels = ["text", "vector"] if mode == "hybrid" else [mode]
    lists = [OLD[f"lists/{name}"][f"{c}/{depths[-1]}"] for c in channels]
    if len(channels) == 1 and not kwargs.get("recency"):
        return [(i, s) for i, s in lists[0][:k]]  # one channel: its own ranking

    def at(depth: int) -> list[tuple[str, float]]:
        cut = [items[:depth] for items in lists]
        if kwargs.get("recency"):  # the candidates newest first, as one more list
            union = dict.fromkeys(i for items in cut for i, _ in items)
            cut.append(sorted(([i, _created(i)] for i in union), key=lambda p: -p[1]))
        fused = _rrf(cut)
        if len(channels) == 1:  # issue 50: recency reorders; a hit keeps its channel's score
            raw = dict(map(tuple, lists[0]))
            return [(i, raw[i]) for i, _ in fused]
        return fused

    out: list[tuple[str, float]] = []  # prefix-stable: the deeper tier only appends
    for depth in depths:
        out += [pair for pair in at(depth) if pair[0] not in {i for i, _ in out}]
        if len(out) >= k:
            break
    return out[:k]


def _unscored(answer: dict[str, Any]) -> dict[str, Any]:
    return {
        **answer,
        "hits": [{k: v for k, v in h.items() if k != "score"} for h in answer["hits"]],
    }


def _probability_fused(kwargs: dict[str, Any]) -> bool:
    """Issue 50: hybrid recall ranks its candidates by their probability of relevance."""
    return bool(kwargs.get("mode", "hybrid") == "hybrid")


def _one_channel_raw(kwargs: dict[str, Any], hits: list[dict[str, Any]]) -> list[tuple[str, float]]:
    """A one-channel recall's hits with that channel's raw score (issue 50: the score is P)."""
    mode = kwargs.get("mode", "hybrid")
    return [(h.get("id") or h["memory"]["id"], h["channels"][mode]["raw"]) for h in hits]


def _probabilities_of_raw(raw: list[tuple[str, float]], hits: list[dict[str, Any]]) -> list[str]:
    """Issue 50: a one-channel score is a probability increasing in the raw score.

    Equal raw scores get equal probabilities (ties stay ties) and a higher raw
    score never a lower one, so the channel's own order is the score's.
    """
    scores = [h["score"] for h in hits]
    problems = [f"score {s} outside [0, 1]" for s in scores if not 0.0 <= s <= 1.0]
    pairs = sorted(zip((r for _, r in raw), scores, strict=True))
    for (r1, s1), (r2, s2) in itertools.pairwise(pairs):
        if (r1 == r2 and s1 != s2) or s1 > s2:
            problems.append(f"raw {r1} -> {s1} but raw {r2} -> {s2}")
    return problems


def _drawn_from_old_candidates(name: str, kwargs: dict[str, Any], got: Any) -> list[str]:
    """A probability-fused answer: its hits are the old channels' candidates, scores in [0, 1].

    The probabilities need the text ceiling and the stored vectors, which the
    old per-channel lists do not hold: the oracle checks what they do fix.
    """
    k = kwargs.get("k", 8)
    depth = 20 if k <= 20 else 40
    union = {i for c in ("text", "vector") for i, _ in OLD[f"lists/{name}"][f"{c}/{depth}"]}
    problems = [
        f"{h['id']} was no channel's candidate" for h in got["hits"] if h["id"] not in union
    ]
    scores = [h["score"] for h in got["hits"]]
    problems += [f"score {s} outside [0, 1]" for s in scores if not 0.0 <= s <= 1.0]
    if not kwargs.get("recency") and scores != sorted(scores, reverse=True):
        problems.append(f"scores not best first: {scores}")
    if len(got["hits"]) != min(k, len(union)):
        problems.append(f"{len(got['hits'])} hits for {min(k, len(union))} candidates")
    return problems


# -- the store under test -------------------------------------------------------------


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path: Path = tmp_path_factory.mktemp("format") / FIX.STORE_NAME
    shutil.copyfile(STORE, path)
    return path


@pytest.fixture(scope="module")
def found(copy: Path) -> dict[str, Any]:
    """What the current code answers on the copy (opening it migrates it)."""
    answers: dict[str, Any] = FIX.answers(copy, current=True)
    return answers


def test_fixture_is_the_one_33de530_wrote() -> None:
    assert hashlib.sha256(STORE.read_bytes()).hexdigest() == SHA256
    assert SHA256 in (FIXTURE / "README.md").read_text("utf-8")
    # Only the main file: the index files are caches a reader must rebuild.
    assert sorted(p.name for p in FIXTURE.iterdir()) == [
        "README.md", "answers_current.json", "answers_old.json", "store.mind",
    ]  # fmt: skip
    assert OLD["open/schema_version"] == FIX.OLD_SCHEMA


def test_opens_migrates_and_rebuilds_the_index_files(copy: Path, found: dict[str, Any]) -> None:
    assert found["open/schema_version"] == CURRENT["open/schema_version"] > FIX.OLD_SCHEMA
    assert found["reopen/schema_version"] == found["open/schema_version"]
    assert found["open/embedder"] == "hashing-64"  # reopened with the recorded model
    # The absent caches were rebuilt from the file and saved beside the copy.
    assert (copy.parent / (copy.name + "-vectors")).stat().st_size > 0
    assert (copy.parent / (copy.name + "-fragments")).stat().st_size > 0
    assert found["stats"]["vectors"] == OLD["stats"]["vectors"] > 0


def test_answers_equal_the_current_recording(found: dict[str, Any]) -> None:
    expected = {k: v for k, v in CURRENT.items() if k != "doctor-verify"}
    assert sorted(found) == sorted(expected)
    wrong = {k: FIX.differences(found[k], v)[:5] for k, v in expected.items()}
    assert not {k: v for k, v in wrong.items() if v}


def test_reopening_the_migrated_file_answers_the_same(copy: Path, found: dict[str, Any]) -> None:
    again = FIX.answers(copy, current=True, cli=False)
    wrong = {k: FIX.differences(again[k], found[k])[:5] for k in again}
    assert not {k: v for k, v in wrong.items() if v}


def _flat(answers: dict[str, Any]) -> dict[str, Any]:
    """Top-level answers, the CLI's split into ``cli/<name>``."""
    out = {k: v for k, v in answers.items() if k != "cli"}
    out.update({f"cli/{k}": v for k, v in answers.get("cli", {}).items()})
    return out


def test_answers_equal_33de530_except_on_purpose(found: dict[str, Any]) -> None:
    new, old = _flat(found), _flat(OLD)
    assert set(new) - set(old) == set(NEW) - {"doctor-verify"}
    assert set(old) <= set(new)
    kwargs = {name: args for name, _, args in FIX.RECALLS}
    wrong: dict[str, list[str]] = {}
    for key, want in old.items():
        got = _without_new_notes(new[key])
        name = key.removeprefix("recall/")
        if key in CHANGED:
            # Listed as changed: it must really differ (else drop it from CHANGED).
            assert FIX.differences(got, want), f"{key} no longer differs: unlist it"
            continue
        if name in ORACLE_RECALLS and "hits" in want and _probability_fused(kwargs[name]):
            problems = _drawn_from_old_candidates(name, kwargs[name], got)
            rest = {k: v for k, v in got.items() if k != "hits"}
            problems += FIX.differences(rest, {k: v for k, v in want.items() if k != "hits"})
        elif name in kwargs and "rerank_alpha" in kwargs[name] and "hits" in want:
            # Issue 50: the rerank orders as before; each hit's score is its probability.
            problems = FIX.differences(_unscored(got), _unscored(want))
            problems += [f"score {h['score']}" for h in got["hits"] if not 0 <= h["score"] <= 1]
        elif name in ORACLE_RECALLS and "hits" in want:
            rebuilt = _fusion_from_old(name, kwargs[name])
            hits = _one_channel_raw(kwargs[name], got["hits"])
            problems = _probabilities_of_raw(hits, got["hits"])
            problems += FIX.differences([list(p) for p in hits], [list(p) for p in rebuilt])
            rest = {k: v for k, v in got.items() if k != "hits"}
            problems += FIX.differences(rest, {k: v for k, v in want.items() if k != "hits"})
        else:
            problems = FIX.differences(got, want)
        if problems:
            wrong[key] = problems[:5]
    assert not wrong


def test_intended_differences_are_the_documented_ones(found: dict[str, Any]) -> None:
    """Each CHANGED answer differs only in what its reason names."""
    new, old = _flat(found), _flat(OLD)
    added = {"missing_vectors", "session_context"}

    def strip_stats(stats: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in stats.items() if k not in added | {"schema_version"}}

    for key in ("stats", "stats/later"):
        assert strip_stats(new[key]) == strip_stats(old[key])
        assert new[key]["missing_vectors"] == 2  # the two written with embedder=None
        assert new[key]["session_context"] is False  # an old store keeps it off
    cli_stats = {k: v for k, v in new["cli/stats"]["json"].items() if k not in added}
    cli_stats["schema_version"] = old["cli/stats"]["json"]["schema_version"]
    assert cli_stats == old["cli/stats"]["json"]
    for key in ("export", "cli/export"):
        header, *rest = new[key]
        assert header.pop("session_context") is False
        assert [header, *rest] == old[key]
    # Issue 50: one-channel scores are probabilities; all else, the raw scores included, is old.
    for key in ("recall/expand-related", "cli/recall-text", "cli/recall-where"):
        got, want = (a["json"] if key.startswith("cli/") else a for a in (new[key], old[key]))
        got = _without_new_notes(got)
        assert _unscored(got) == _unscored(want), key
        hits = [h for h in got["hits"] if h["channels"]]  # expand_related's neighbours: none
        assert [h["score"] for h in got["hits"] if not h["channels"]] == [
            h["score"] for h in want["hits"] if not h["channels"]
        ]
        (mode,) = got["channels"]
        assert _probabilities_of_raw(_one_channel_raw({"mode": mode}, hits), hits) == [], key
        assert [h["channels"][mode]["raw"] for h in hits] == [
            h["score"] for h in want["hits"] if h["channels"]
        ], key
    missing = new["cli/get-missing"]
    assert (missing["exit"], missing["stdout"]) == (old["cli/get-missing"]["exit"], "")
    # Under --json the error is a JSON object on stderr, the same message inside.
    error = json.loads(missing["stderr"])["error"]
    assert error["type"] == "NotFoundError"
    assert f"error: {error['message']}\n" == old["cli/get-missing"]["stdout"]


def test_doctor_verify_finds_the_file_sound() -> None:
    verdict = FIX.doctor_verdict(STORE)
    assert verdict == CURRENT["doctor-verify"]
    assert verdict["verify"]["ok"] is True and verdict["verify"]["damaged"] == []
