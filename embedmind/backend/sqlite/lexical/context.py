"""Session context: a memory's lexical terms include its dialog neighbours' at reduced weight.

In a dialog the answer often does not repeat the question's words, but the
turn before it (the other speaker's question) does. So, when the store's
switch is on, a memory with a ``session_id`` is indexed as
``WEIGHT_OWN × its terms + WEIGHT_NEIGHBOUR × (previous turn's + next turn's)``
(:func:`embedmind.lexical.session_context.combined`, the rule both backends share)
— the issue's "previous + 2 × own + next", which measured best on the LoCoMo
development split (``docs/benchmarks.md``). With an alias table
(:mod:`embedmind.lexical.aliases`) a memory's alias field joins at weight 1;
a neighbour lends only its own terms (its expansions stay its own). Its
content, vectors and snippets stay its own; only the postings change.
Memories without a session, and a memory alone in its session, are indexed
as before.

The neighbours are the indexed memories of the same ``(namespace,
session_id)`` just before and after it, by ``created_at`` then key. Each
document's postings record the neighbours they were built with, so removing
a document re-indexes exactly the two whose context it was, and adding one
re-indexes exactly the ones it now sits beside: the postings always equal a
rebuild from scratch (``tests/test_session_context.py`` checks it).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence, Set
from dataclasses import dataclass

import apsw

from embedmind.backend.sqlite import alias_rows, session_rows
from embedmind.backend.sqlite.postings import get_entry, lookup_terms
from embedmind.backend.sqlite.session_rows import Place
from embedmind.lexical.aliases import EMPTY, Fields, Table, fields
from embedmind.lexical.analyzer import analyze
from embedmind.lexical.dates import dated
from embedmind.lexical.session_context import Links, combined


@dataclass(frozen=True)
class Entry:
    """A document to (re)index: its key, weighted term counts and dialog links."""

    key: int
    counts: Counter[str]
    links: Links | None


StoredLinks = Callable[[int], Links]
"""The links a document's postings were built with."""


def plan_add(
    conn: apsw.Connection,
    docs: Sequence[tuple[int, str]],
    analysed: Sequence[Fields],
    stored: StoredLinks,
    table: Table,
) -> tuple[list[Entry], list[int]]:
    """Entries for ``docs`` (not indexed yet) and the indexed neighbours they change.

    ``analysed`` holds each document's fields under ``table``, in order.

    Returns:
        The entries to index (new documents first, then re-indexed neighbours)
        and the keys of the indexed documents to drop before indexing them.
    """
    texts = dict(docs)
    places = session_rows.places(conn, texts)
    links: dict[int, Links] = {}
    dialogs = _by_dialog(places.values())
    ends = session_rows.indexed_neighbours(conn, [(dialog[0], dialog[-1]) for dialog in dialogs])
    for dialog, around in zip(dialogs, ends, strict=True):
        links.update(_dialog_links(conn, dialog, around, texts.keys(), stored))
    own = {key: fields_ for (key, _), fields_ in zip(docs, analysed, strict=True)}
    needed = {o for pair in links.values() for o in pair if o is not None} | links.keys()
    own.update(read_fields(conn, needed - own.keys(), table))
    entries = [
        Entry(key, combined(own, key, links[key]) if key in links else own[key].alone(),
              links.get(key))
        for key, _ in docs
    ]  # fmt: skip
    changed = [key for key in links if key not in texts]
    entries += [Entry(key, combined(own, key, links[key]), links[key]) for key in changed]
    return entries, changed


def plan_remove(
    conn: apsw.Connection, links: Links, stored: StoredLinks, table: Table
) -> list[Entry]:
    """Entries re-indexing the two neighbours of a document that leaves the dialog."""
    previous, following = links
    new: dict[int, Links] = {}
    if previous is not None:
        new[previous] = (stored(previous)[0], following)
    if following is not None:
        new[following] = (previous, stored(following)[1])
    needed = {o for pair in new.values() for o in pair if o is not None} | new.keys()
    own = read_fields(conn, needed, table)
    return [Entry(key, combined(own, key, pair), pair) for key, pair in new.items()]


def plan_reindex(
    conn: apsw.Connection, indexed: dict[int, Links], table: Table, *, context: bool
) -> list[Entry]:
    """Entries re-deriving indexed documents in place (same links) under ``table``.

    ``indexed`` maps each document to the links its postings were built with;
    with ``context`` off the documents are indexed alone.
    """
    needed = set(indexed)
    if context:
        needed |= {o for pair in indexed.values() for o in pair if o is not None}
    own = read_fields(conn, needed, table)
    if not context:
        return [Entry(key, own[key].alone(), None) for key in indexed if key in own]
    return [Entry(key, combined(own, key, pair), pair) for key, pair in indexed.items()]


def read_fields(conn: apsw.Connection, keys: Iterable[int], table: Table) -> dict[int, Fields]:
    """The fields of each of ``keys`` that exists, from its current record, under ``table``."""
    texts = session_rows.contents(conn, keys)
    return with_dates(conn, {key: fields(text, table) for key, text in texts.items()})


def with_dates(conn: apsw.Connection, own: dict[int, Fields]) -> dict[int, Fields]:
    """``own`` with each document's date words when the store's switch is on (as is when off)."""
    if not own or not session_rows.enabled(conn, session_rows.DATES):
        return own
    stamps = session_rows.created(conn, own)
    return {key: dated(fields_, stamps.get(key)) for key, fields_ in own.items()}


def _by_dialog(places: Iterable[Place]) -> list[list[Place]]:
    groups: dict[tuple[str, str], list[Place]] = defaultdict(list)
    for place in places:
        groups[place.dialog].append(place)
    return [sorted(group) for group in groups.values()]


def _dialog_links(
    conn: apsw.Connection, batch: list[Place], ends: Links, new: Set[int], stored: StoredLinks
) -> dict[int, Links]:
    """Links of the batch's documents of one dialog and of the indexed ones beside them.

    ``ends`` are the indexed documents just before the batch's first and after its last.
    """
    low, high = batch[0], batch[-1]
    inside = session_rows.indexed_between(conn, low, high) if len(batch) > 1 else []
    chain: list[int | None] = [ends[0], *(p.key for p in sorted([*batch, *inside])), ends[1]]
    out: dict[int, Links] = {}
    for i in range(1, len(chain) - 1):
        key, previous, following = chain[i], chain[i - 1], chain[i + 1]
        if key is None:  # pragma: no cover - only the ends may be absent
            continue
        if key in new or previous in new or following in new:
            out[key] = (previous, following)
    first, last = chain[0], chain[-1]
    if first is not None:
        out[first] = (stored(first)[0], chain[1])
    if last is not None:
        out[last] = (chain[-2], stored(last)[1])
    return out


def context_terms(
    conn: apsw.Connection, key: int, content: str, query: str, table: Table | None = None
) -> tuple[str, ...]:
    """The query terms a document matches only through its neighbours' text (for explain).

    Empty when the document's own words (and its alias field) hold every
    query term it matches, or when its postings carry no context. ``table``
    defaults to the store's alias table, read from ``conn``.
    """
    if table is None:
        table = Table.compile(alias_rows.rows(conn)) if alias_rows.version(conn) else EMPTY
    mine = with_dates(conn, {key: fields(content, table)})[key]
    own = {*mine.own, *mine.alias}
    wanted = [term for term in dict.fromkeys(analyze(query)) if term not in own]
    if not wanted:
        return ()
    entry = get_entry(conn, key)
    if entry is None or entry[3] == (None, None):
        return ()
    held = set(entry[1].tolist())
    rows = lookup_terms(conn, wanted)
    return tuple(term for term in wanted if term in rows and rows[term].term_id in held)
