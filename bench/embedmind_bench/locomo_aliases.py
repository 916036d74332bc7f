"""Measure the alias table on LoCoMo: an empty table (today) against a generic English one.

One store holds the development split with session context on (a new
store's default). Each question's vector is computed once and passed to
``Store.recall(vector=...)``. Runs, all through the public API, in one
process, side by side:

- ``base`` — no alias table (today's default);
- ``generic`` — :data:`GENERIC`, common English nicknames, abbreviations and
  informal words with their standard forms, written down from general
  knowledge of English, not from the development split (no turn or question
  was read to make it; "will" → "william" was left out as the modal verb);
- ``generic q=1.0`` — the same table with the query's expansions at full
  weight (:data:`embedmind.lexical.aliases.QUERY_WEIGHT` 1.0 instead of 0.5);
- ``emptied`` — the table removed again (``set_aliases({}, replace=True)``):
  every question's ranked ids must equal ``base``'s exactly, or the run fails.

Each in ``hybrid`` and ``text`` mode: recall@10 and hit@10 overall and per
category with standard errors (over questions), and the paired difference to
``base`` with the standard error of that difference
(:func:`embedmind_bench.locomo_query_side.table`).

Run: ``python -m embedmind_bench.locomo_aliases [LOCOMO.json]`` (a few
minutes on 2 cores, most of it embedding the turns).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from embedmind.lexical import aliases as lexical_aliases
from embedmind.lexical.analyzer import analyze
from embedmind.store import Store
from embedmind_bench.locomo_data import data_path, load
from embedmind_bench.locomo_query_side import answers, table
from embedmind_bench.locomo_tuning import ingest

GENERIC: dict[str, str] = {
    # Given-name nicknames.
    "bob": "robert", "bill": "william", "mike": "michael",
    "jim": "james", "jimmy": "james", "tom": "thomas", "dave": "david", "joe": "joseph",
    "dan": "daniel", "chris": "christopher", "matt": "matthew", "nick": "nicholas",
    "tony": "anthony", "steve": "steven", "rick": "richard", "dick": "richard",
    "ed": "edward", "ted": "edward", "andy": "andrew", "alex": "alexander", "sam": "samuel",
    "ben": "benjamin", "jen": "jennifer", "jenny": "jennifer", "liz": "elizabeth",
    "beth": "elizabeth", "kate": "katherine", "katie": "katherine", "sue": "susan",
    "meg": "margaret", "peggy": "margaret", "becky": "rebecca", "abby": "abigail",
    # Places and institutions.
    "nyc": "new york", "la": "los angeles", "sf": "san francisco", "uk": "united kingdom",
    "usa": "united states", "dc": "washington", "uni": "university",
    # Informal or short words and their standard forms.
    "mom": "mother", "mum": "mother", "dad": "father", "grandma": "grandmother",
    "grandpa": "grandfather", "bro": "brother", "sis": "sister", "kid": "child",
    "gf": "girlfriend", "bf": "boyfriend", "hubby": "husband", "bday": "birthday",
    "pic": "picture", "photo": "picture", "tv": "television",
    "movie": "film", "doc": "doctor", "vet": "veterinarian", "info": "information",
    "ad": "advertisement", "app": "application", "exam": "examination", "lab": "laboratory",
    "gym": "fitness", "job": "work", "career": "work", "hobby": "pastime",
    "pet": "animal", "puppy": "dog", "kitten": "cat", "vacation": "holiday",
    "trip": "travel", "car": "automobile", "bike": "bicycle", "phone": "telephone",
    "fridge": "refrigerator", "plane": "airplane", "sneakers": "shoes", "guitar": "music",
}  # fmt: skip
"""A generic English alias table, fixed before any measurement and not derived from the data."""


@contextlib.contextmanager
def query_weight(value: float) -> Iterator[None]:
    """Set the query side's expansion weight for one run."""
    saved = lexical_aliases.QUERY_WEIGHT
    lexical_aliases.QUERY_WEIGHT = value
    try:
        yield
    finally:
        lexical_aliases.QUERY_WEIGHT = saved


def holding(texts: Sequence[str]) -> int:
    """How many of ``texts`` hold a key of :data:`GENERIC` (after analysis)."""
    table = lexical_aliases.Table.compile(GENERIC.items())
    return sum(bool(table.matches(analyze(text))) for text in texts)


def main(argv: Sequence[str] = ()) -> None:
    """Ingest the development split, ask each run in hybrid and text mode, print the tables."""
    from embedmind.embedders.minilm import MiniLMEmbedder

    data = load(data_path(argv[0] if argv else None))
    embedder = MiniLMEmbedder()
    questions = data.questions
    runs: dict[str, dict[str, tuple[np.ndarray, float]]] = {"hybrid": {}, "text": {}}
    with (
        tempfile.TemporaryDirectory(prefix="embedmind-aliases-") as tmp,
        Store.open(
            Path(tmp) / "a.mind", embedder=embedder, synchronous="NORMAL", session_context=True
        ) as store,
    ):
        ingest(store, data, embedder)
        vectors = [embedder.embed_query(q.text) for q in questions]
        base_ids: dict[str, list[list[str]]] = {}
        for mode in runs:
            rows, p50, base_ids[mode] = answers(store, questions, vectors, mode=mode)
            runs[mode]["base"] = (rows, p50)
        started = time.perf_counter()
        reindexed = store.set_aliases(GENERIC)
        set_seconds = time.perf_counter() - started
        for mode in runs:
            runs[mode]["generic"] = answers(store, questions, vectors, mode=mode)[:2]
            with query_weight(1.0):
                runs[mode]["generic q=1.0"] = answers(store, questions, vectors, mode=mode)[:2]
        store.set_aliases({}, replace=True)
        for mode in runs:
            rows, p50, ids = answers(store, questions, vectors, mode=mode)
            if ids != base_ids[mode]:
                raise SystemExit(f"{mode}: an emptied alias table does not rank as no table")
            runs[mode]["emptied"] = (rows, p50)
    turns = holding([d.content for d in data.drafts])
    asked = holding([q.text for q in questions])
    print(
        f"LoCoMo dev: {len(questions)} questions ({asked} hold a key), {len(data.drafts)} turns "
        f"({turns} hold a key); {len(GENERIC)} aliases; set_aliases re-indexed {reindexed} "
        f"memories in {set_seconds:.2f} s; emptied table ranks exactly as no table: yes"
    )
    for mode, by_name in runs.items():
        print(f"\nmode {mode}:")
        for line in table(questions, by_name):
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
