"""Alias expansion: a store-level table of keys ("NYC") and targets ("new york").

Semantics (``docs/how-to/aliases.md`` is the user's page):

- **Normalisation.** Keys and targets go through the analyzer
  (:func:`embedmind.lexical.analyzer.analyze`): NFKC, case folding, stop
  words dropped, Snowball stemming. So "NYC", "nyc" and "Ｎｙｃ" are one key,
  and a key matches wherever the *analysed* text holds its terms in order
  ("New York", "new-york" and "New the York" all hold ``new york``).
- **Multi-word keys and targets.** A key of up to :data:`MAX_KEY_TERMS`
  terms matches a run of consecutive analysed terms. Matching is greedy from
  the left, longest key first, and matches never overlap. A target of up to
  :data:`MAX_TARGET_TERMS` terms contributes each of its terms once per match.
- **One step.** Targets are not expanded again ("nyc" → "new york" and
  "new york" → "big apple" do not make "nyc" match "apple").
- **Index side (BM25F).** A memory's postings hold two fields: its own terms
  and the *alias field*, the target terms of the keys its text contains.
  Own terms weigh :data:`WEIGHT_OWN` and alias terms 1, so an expansion
  counts half as much as a word the memory says; a memory without any
  expansion is indexed exactly as without aliases (its terms count once).
  :mod:`embedmind.backend.sqlite.lexical.context` composes this with session context: a
  memory with neighbours is ``2 × own + alias + previous's own + next's own``
  (neighbours lend their words, not their expansions).
- **Query side.** The query's terms keep their weight; the target terms of
  the keys it contains that it does not already hold are added at
  :data:`QUERY_WEIGHT` (their idf scaled), so "NYC" finds a memory that only
  says "New York", and a memory that says "NYC" outranks it.

An empty table changes nothing: every function here then returns what the
analyzer alone gives.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from embedmind.lexical.analyzer import analyze, analyze_many

MAX_KEY_TERMS = 4
"""Longest key, in analysed terms."""
MAX_TARGET_TERMS = 8
"""Longest target, in analysed terms."""
MAX_ALIASES = 10_000
"""Most aliases a store holds: each write scans its text against all of them."""
MAX_CHARS = 200
"""Longest key or target, in characters."""
WEIGHT_OWN = 2
"""Weight of a memory's own terms when it has an alias field (the alias field weighs 1)."""
QUERY_WEIGHT = 0.5
"""Weight of a query's expansion terms, relative to its own (the index side's 1 : 2)."""


@dataclass(frozen=True)
class Table:
    """A compiled alias table: analysed key term tuples to analysed target terms."""

    targets: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    longest: int = 0

    @staticmethod
    def compile(pairs: Iterable[tuple[str, str]]) -> Table:
        """Compile ``(key, target)`` strings (already validated) into a table."""
        targets: dict[tuple[str, ...], tuple[str, ...]] = {}
        for key, target in pairs:
            terms = tuple(analyze(key))
            if terms:
                targets[terms] = tuple(analyze(target))
        return Table(targets, max((len(k) for k in targets), default=0))

    def __bool__(self) -> bool:
        return bool(self.targets)

    def matches(self, terms: Sequence[str]) -> list[tuple[str, ...]]:
        """The keys found in an analysed term sequence, left to right (greedy, longest first)."""
        found: list[tuple[str, ...]] = []
        if not self.targets:
            return found
        i, n = 0, len(terms)
        while i < n:
            for size in range(min(self.longest, n - i), 0, -1):
                key = tuple(terms[i : i + size])
                if key in self.targets:
                    found.append(key)
                    i += size
                    break
            else:
                i += 1
        return found

    def expansions(self, terms: Sequence[str]) -> Counter[str]:
        """The alias field of a term sequence: each match's target terms, once per match."""
        counts: Counter[str] = Counter()
        for key in self.matches(terms):
            counts.update(self.targets[key])
        return counts


EMPTY = Table()


@dataclass(frozen=True)
class Fields:
    """A document's own terms and its alias field (target terms of the keys it holds)."""

    own: Counter[str]
    alias: Counter[str]

    def alone(self) -> Counter[str]:
        """The weighted counts of a document indexed without session context."""
        if not self.alias:
            return self.own
        counts = Counter({term: WEIGHT_OWN * tf for term, tf in self.own.items()})
        counts.update(self.alias)
        return counts

    def context(self) -> Counter[str]:
        """What this document lends a dialog neighbour's postings: its own terms only.

        Not its alias field: a neighbour's expansions would weigh as much in
        the neighbour as in the memory that says the key, and a short turn
        beside it would outrank it on its own alias.
        """
        return self.own


def fields(text: str, table: Table) -> Fields:
    """Analyse ``text`` into its own terms and its alias field under ``table``."""
    return _fields(analyze(text), table)


def fields_many(texts: Sequence[str], table: Table) -> list[Fields]:
    """:func:`fields` of each of ``texts``, analysed as one batch (a bulk write's path)."""
    return [_fields(terms, table) for terms in analyze_many(texts)]


def _fields(terms: list[str], table: Table) -> Fields:
    return Fields(Counter(terms), table.expansions(terms) if table else Counter())


def query_weights(terms: Sequence[str], table: Table) -> dict[str, float]:
    """The terms a query is scored with and their weights (1 own, :data:`QUERY_WEIGHT` added).

    ``terms`` are the query's distinct analysed terms in first-occurrence
    order (:func:`embedmind.backend.sqlite.lexical.index.query_terms`); keys are matched in
    that sequence.
    """
    weights = dict.fromkeys(terms, 1.0)
    for term in table.expansions(terms) if table else ():
        weights.setdefault(term, QUERY_WEIGHT)
    return weights
