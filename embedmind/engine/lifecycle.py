"""Lifecycle and namespaces over a backend session (the Go seed's service calls).

Reinforcement bumps access counts and may slide TTLs; the expiry sweep deletes
only memories whose TTL is still past when it reaches them (the seed's
``DeleteIfExpiredBefore``, so a memory reinforced meanwhile survives);
tiers change in place; namespaces are listed with their activity, deleted,
moved and renamed; namespace links grant reads of another namespace's tiers.
Every change goes through the commit path (:mod:`embedmind.engine.commit`).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any

from embedmind.checks import is_int, no_surrogates
from embedmind.engine.commit import Changed, Committed, changed, emit
from embedmind.engine.state import Engine
from embedmind.errors import InvalidInputError, NotFoundError
from embedmind.ids import validate_id
from embedmind.model import Memory, NamespaceActivity, NamespaceLink, Tier
from embedmind.query.scope import SUBTREE_SUFFIX, normalize_namespace, scope_items
from embedmind.timestamps import (
    duration_micros,
    from_micros,
    in_range,
    optional_to_micros,
    resolve_now,
)

DURABLE_TIERS = (Tier.SEMANTIC.value, Tier.PROCEDURAL.value)
"""What a namespace link grants when it names no tiers (the Go seed's default)."""
MAX_SWEEP = 100_000


def reinforce(
    engine: Engine,
    ids: Sequence[str],
    *,
    now: _dt.datetime | None = None,
    extend_ttl: _dt.timedelta | None = None,
) -> int:
    """Record that memories were just used: bump access counts and last access."""
    at = resolve_now(now)
    expiry = (
        None
        if extend_ttl is None
        else in_range(at + duration_micros(extend_ttl, "extend_ttl"), "extend_ttl")
    )
    wanted = [validate_id(i, "ids") for i in _list(ids, "ids")]
    with engine.commit.write() as tx:
        found = tx.session.records.find_many(wanted).values()
        keys = sorted(e.key for e in found if not e.forgotten)
        reinforced = tx.session.lifecycle.reinforce(keys, at, expiry)
        tx.record(Committed("reinforce", updated=changed(tx.session.records, keys)))
    return reinforced


def sweep_expired(engine: Engine, *, now: _dt.datetime | None = None, limit: int = 1_000) -> int:
    """Delete memories whose TTL passed at ``now``, at most ``limit``."""
    if not is_int(limit) or not 1 <= limit <= MAX_SWEEP:
        raise InvalidInputError("limit", f"expected an int within 1-{MAX_SWEEP}")
    at = resolve_now(now)
    with engine.backend.read() as session:
        listed = session.lifecycle.expired(at, limit)
    swept = 0
    for key, memory_id, tier in listed:
        with engine.commit.write() as tx:
            if not tx.session.lifecycle.still_expired(key, at):
                continue
            namespace = changed(tx.session.records, [key])[0].namespace
            tx.session.records.delete([key])
            tx.record(Committed("sweep", expired=(Changed(memory_id, namespace, tier),)))
        swept += 1
    if swept:  # a gauge, read once per sweep rather than counted per commit
        with engine.backend.read() as session:
            by_tier = session.records.statistics(at)["by_tier"]
        for tier_name, live in by_tier.items():
            emit(engine.metrics, "active_by_tier", tier_name, live)
    return swept


def retier(
    engine: Engine,
    id: str,
    tier: Tier | str,
    *,
    expires_at: _dt.datetime | None = None,
    now: _dt.datetime | None = None,
) -> Memory:
    """Change a memory's tier and expiry in place (retro-tiering)."""
    try:
        name = Tier(tier).value
    except ValueError:
        raise InvalidInputError("tier", f"{tier!r} is not a tier") from None
    expiry = optional_to_micros(expires_at, "expires_at")
    at = resolve_now(now)
    with engine.commit.write() as tx:
        existing = tx.session.records.find(validate_id(id))
        if existing is None or existing.forgotten:
            raise NotFoundError(id)
        tx.session.lifecycle.retier(existing.key, name, expiry, at)
        memory = tx.session.records.load([existing.key])[existing.key]
        tx.record(Committed("retier", placed=changed(tx.session.records, [existing.key])))
    return memory


def namespaces(engine: Engine) -> list[NamespaceActivity]:
    """Namespaces holding live memories, with their count and last write."""
    with engine.backend.read() as session:
        rows = session.lifecycle.namespace_activity()
    return [NamespaceActivity(n, c, from_micros(w)) for n, c, w in rows]


def delete_namespace(engine: Engine, namespace: str) -> int:
    """Delete every memory of one namespace (exactly it, not its subtree)."""
    name = normalize_namespace(namespace)
    with engine.commit.write() as tx:
        keys = tx.session.lifecycle.keys_in_namespace(name)
        gone = changed(tx.session.records, keys)
        tx.session.records.delete(keys)
        tx.record(Committed("delete_namespace", deleted=tuple(c.id for c in gone)))
    return len(keys)


def move(
    engine: Engine,
    ids: Sequence[str],
    from_namespace: str,
    to_namespace: str,
    *,
    now: _dt.datetime | None = None,
) -> int:
    """Move memories from one namespace to another (ids elsewhere are skipped)."""
    source = normalize_namespace(from_namespace, "from_namespace")
    target = normalize_namespace(to_namespace, "to_namespace")
    wanted = [validate_id(i, "ids") for i in _list(ids, "ids")]
    at = resolve_now(now)
    with engine.commit.write() as tx:
        found = tx.session.records.find_many(wanted)
        keys = sorted(e.key for e in found.values() if e.namespace == source)
        moved = tx.session.lifecycle.move(keys, target, at)
        tx.record(Committed("move", placed=changed(tx.session.records, keys, live=True)))
    return moved


def rename_namespace(engine: Engine, old: str, new: str, *, now: _dt.datetime | None = None) -> int:
    """Move every memory of ``old`` to ``new`` and rewrite its links."""
    source = normalize_namespace(old, "old")
    target = normalize_namespace(new, "new")
    at = resolve_now(now)
    with engine.commit.write() as tx:
        keys = tx.session.lifecycle.keys_in_namespace(source)
        moved = tx.session.lifecycle.move(keys, target, at)
        if source != target:
            tx.session.lifecycle.rename_link_endpoints(source, target)
        tx.record(
            Committed("rename_namespace", placed=changed(tx.session.records, keys, live=True))
        )
    return moved


def link_namespaces(
    engine: Engine,
    src: str,
    dst: str,
    *,
    tiers: Sequence[Tier | str] | None = None,
    note: str = "",
    created_at: _dt.datetime | None = None,
) -> NamespaceLink:
    """Let reads of ``src`` with ``follow_links=True`` also see ``dst`` (its ``tiers``)."""
    source = normalize_namespace(src, "src")
    target = normalize_namespace(dst, "dst")
    names = None if tiers is None else [_tier(t) for t in _list(tiers, "tiers")]
    if not isinstance(note, str):
        raise InvalidInputError("note", "expected a str")
    no_surrogates(note, "note")
    engine.backend.check_text(note, "note")
    created = resolve_now(created_at)
    with engine.commit.write() as tx:  # a link changes no memory: nothing to record
        tx.session.lifecycle.put_link(source, target, names, note, created)
    return NamespaceLink(source, target, _tiers(names), note, from_micros(created))


def unlink(engine: Engine, src: str, dst: str) -> bool:
    """Remove the link ``src -> dst``; whether it existed."""
    source, target = normalize_namespace(src, "src"), normalize_namespace(dst, "dst")
    with engine.commit.write() as tx:  # a link changes no memory: nothing to record
        return tx.session.lifecycle.delete_link(source, target)


def links(engine: Engine, src: str | None = None) -> list[NamespaceLink]:
    """Links from ``src`` (or all), ordered by source and destination.

    Raises:
        DamagedRecordError: When a link's row was changed behind the engine's
            back (tiers, time or text that do not decode), naming the link
            (``link``) and the column; it reaches every read that follows links.
    """
    source = None if src is None else normalize_namespace(src, "src")
    with engine.backend.read() as session:
        rows = session.lifecycle.links(source)
    return [
        NamespaceLink(r.src, r.dst, _tiers(r.tiers), r.note, from_micros(r.created_at))
        for r in rows
    ]


def grants(engine: Engine, namespace: object) -> list[tuple[str, tuple[str, ...]]]:
    """The ``(namespace, tiers)`` that links from the exact namespaces in scope grant."""
    # Compared in NFC, as links are stored: an NFD spelling of a namespace is
    # the same namespace and must follow the same links.
    sources = {
        normalize_namespace(item)
        for item in scope_items(namespace)
        if not (isinstance(item, str) and item.endswith(SUBTREE_SUFFIX))
    }
    granted = []
    for link in links(engine):
        if link.src in sources:
            tiers = DURABLE_TIERS if link.tiers is None else tuple(t.value for t in link.tiers)
            granted.append((link.dst, tiers))
    return granted


def _list(values: object, field: str) -> list[Any]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidInputError(field, "expected a list")
    return list(values)


def _tier(value: object) -> str:
    try:
        return Tier(value).value
    except ValueError:
        raise InvalidInputError("tiers", f"{value!r} is not a tier") from None


def _tiers(names: Sequence[str] | None) -> tuple[Tier, ...] | None:
    return None if names is None else tuple(Tier(n) for n in names)
