"""The store's alias table: validation, changes, and the resumable re-index they start.

A change to the table (:func:`set_aliases`, :func:`remove_aliases`) commits
the new rows together with the list of memories whose postings it changes:
every indexed memory whose postings hold all the terms of a changed key
(its own text or a dialog neighbour's holds the key). The re-index then
runs in batches of :data:`BATCH` memories, one transaction each, each
clearing its own pending marks; a crash or kill leaves the rest marked, and
the next alias call (or :meth:`embedmind.Store.reindex_aliases`) finishes
it. Until then a marked memory is found by its own words and its neighbours'
exactly as always, and by the expansions of the table its postings were
built with; the query side already uses the new table. Every step commits
through :class:`embedmind.engine.commit.CommitPath` and records no memory change
(an alias change rewrites no memory's row).

The semantics of matching and weighting are in :mod:`embedmind.lexical.aliases`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tqdm import tqdm

from embedmind.backend.protocol import Aliases, AliasWrites, Backend
from embedmind.checks import a_str
from embedmind.crashpoints import crashpoint
from embedmind.engine.commit import CommitPath
from embedmind.errors import InvalidInputError
from embedmind.lexical.aliases import MAX_ALIASES, MAX_CHARS, MAX_KEY_TERMS, MAX_TARGET_TERMS
from embedmind.lexical.analyzer import analyze

BATCH = 500
"""Memories re-indexed per transaction."""

Entry = tuple[str, str, str]
"""``(normalised key, key as given, target as given)``."""


def normalised(key: str) -> str:
    """The table's key for ``key``: its analysed terms joined by spaces."""
    return " ".join(analyze(key))


def _text(value: object, field: str, what: str, limit: int) -> list[str]:
    """Check one key or target; return its analysed terms."""
    terms = analyze(a_str(value, field, what=f"a string {what}", max_chars=MAX_CHARS))
    if not terms:
        raise InvalidInputError(
            field,
            f"the {what} {value!r} has no index terms (stop words and punctuation are "
            "dropped): use words a memory would be found by",
        )
    if len(terms) > limit:
        raise InvalidInputError(
            field, f"the {what} has {len(terms)} index terms; at most {limit} are allowed"
        )
    return terms


def validate(mapping: object) -> list[Entry]:
    """Check a ``{key: target}`` mapping; return its entries by normalised key.

    Raises:
        InvalidInputError: When it is not a mapping of strings, a key or target
            is empty after analysis, too long, a key maps to itself, or two
            keys normalise alike ("NYC" and "nyc").
    """
    if not isinstance(mapping, Mapping):
        raise InvalidInputError(
            "aliases", f"expected a mapping of key to target, got {type(mapping).__name__}"
        )
    if len(mapping) > MAX_ALIASES:
        raise InvalidInputError("aliases", f"more than {MAX_ALIASES} aliases")
    entries: dict[str, Entry] = {}
    for key, target in mapping.items():
        field = f"aliases[{key!r}]"
        key_terms = _text(key, field, "key", MAX_KEY_TERMS)
        target_terms = _text(target, field, "target", MAX_TARGET_TERMS)
        if key_terms == target_terms:
            raise InvalidInputError(field, "the target analyses to the key itself")
        norm = " ".join(key_terms)
        if norm in entries:
            raise InvalidInputError(
                field, f"{key!r} and {entries[norm][1]!r} are the same key ({norm!r}): keep one"
            )
        entries[norm] = (norm, key, target)
    return [entries[k] for k in sorted(entries)]


def validate_keys(keys: object) -> list[str]:
    """Check the keys given to remove; return their normalised forms.

    Raises:
        InvalidInputError: When ``keys`` is a single string or not an iterable
            of strings with index terms.
    """
    if isinstance(keys, str) or not isinstance(keys, Iterable):
        raise InvalidInputError("keys", "expected a list of keys, e.g. remove_aliases(['nyc'])")
    out = []
    for key in keys:
        out.append(" ".join(_text(key, f"keys[{key!r}]", "key", MAX_KEY_TERMS)))
    return out


def stored(table: Aliases) -> dict[str, Entry]:
    """The table's rows by normalised key."""
    return {normalised(given): (normalised(given), given, target) for given, target in table.rows()}


def current(table: Aliases) -> dict[str, str]:
    """The table as ``{key as given: target}``, in normalised-key order."""
    by_norm = stored(table)
    return {by_norm[norm][1]: by_norm[norm][2] for norm in sorted(by_norm)}


def set_aliases(commit: CommitPath, entries: list[Entry], *, replace: bool) -> None:
    """Write validated entries (all of the table with ``replace``) and mark what they change."""
    with commit.write() as tx:
        aliases = tx.session.aliases
        old = stored(aliases)
        new = {entry[0]: entry for entry in entries}
        if not replace and len(old.keys() | new.keys()) > MAX_ALIASES:
            raise InvalidInputError("aliases", f"the table would hold more than {MAX_ALIASES}")
        dropped = sorted(old.keys() - new.keys()) if replace else []
        changed = [
            norm
            for norm, (_, _, target) in new.items()
            if norm not in old or analyze(old[norm][2]) != analyze(target)
        ]
        # A new spelling of a stored key ("nyc" for "NYC") replaces its row.
        respelt = [old[n][1] for n in new if n in old and old[n][1] != new[n][1]]
        if dropped or respelt:
            aliases.delete([*(old[n][1] for n in dropped), *respelt])
        if entries:
            aliases.put([(given, target) for _, given, target in entries])
        _mark(aliases, [*dropped, *changed])


def remove_aliases(commit: CommitPath, keys: list[str]) -> int:
    """Delete aliases by normalised key; mark what they changed; return how many existed."""
    with commit.write() as tx:
        aliases = tx.session.aliases
        existing = stored(aliases)
        gone = sorted(existing.keys() & set(keys))
        if gone:
            aliases.delete([existing[norm][1] for norm in gone])
            _mark(aliases, gone)
    return len(gone)


def _mark(aliases: AliasWrites, keys: list[str]) -> None:
    """Mark every memory whose postings a change to these keys alters."""
    for norm in keys:
        aliases.mark_holding(norm.split(" "))


def reindex(commit: CommitPath, backend: Backend, *, show_progress: bool = False) -> int:
    """Re-index every marked memory, :data:`BATCH` per transaction; return how many."""
    with backend.read() as session:
        total = session.aliases.pending_count()
    done = 0
    if total == 0:
        return 0
    with tqdm(total=total, disable=not show_progress, unit="memory", desc="aliases") as bar:
        while True:
            with commit.write() as tx:  # rewrites postings, no memory row: records nothing
                keys = tx.session.aliases.pending(BATCH)
                if keys:
                    done += tx.session.aliases.reindex(keys)
                    crashpoint("alias-reindex")
            if not keys:
                return done
            bar.update(len(keys))


LINE_FIELDS = frozenset({"type", "key", "target"})
"""The fields of an ``alias`` line of an export."""


def line(given: str, target: str) -> dict[str, str]:
    """The export line of one alias."""
    return {"type": "alias", "key": given, "target": target}


def from_line(item: Mapping[str, Any], seen: dict[str, str]) -> tuple[str, str]:
    """Validate one ``alias`` line of an import against the aliases ``seen`` before it.

    ``seen`` maps normalised keys to the key as given on an earlier line; it
    gains this line's key.

    Raises:
        InvalidInputError: When a field is unknown or missing, the key or
            target is invalid, or an earlier line has the same key.
    """
    for name in item:
        if name not in LINE_FIELDS:
            raise InvalidInputError(str(name)[:64], "not a field of an alias line")
    for name in ("key", "target"):
        if name not in item:
            raise InvalidInputError(name, "missing")
    key, target = item["key"], item["target"]
    (norm, _, _), *_ = validate({key: target})
    if norm in seen:
        raise InvalidInputError("key", f"{key!r} is the same key as {seen[norm]!r} before it")
    if len(seen) >= MAX_ALIASES:
        raise InvalidInputError("key", f"more than {MAX_ALIASES} aliases")
    seen[norm] = key
    return key, target
