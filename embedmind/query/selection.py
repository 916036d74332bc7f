"""Which memories a read may see, as one validated value every backend compiles.

A :class:`Selection` gathers the named filters (namespace scope, agent,
session, tags, tiers, levels, expiry, forgotten, supersession, ``as_of``) and
the parsed ``where`` filter. Every read path — text recall, vector recall,
``iter``, ``stats`` — passes the same selection down, so a memory is visible
through one path exactly when it is visible through all of them. Only a
backend turns it into SQL (:mod:`embedmind.backend.sqlite.selection_sql`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from embedmind.checks import a_str
from embedmind.errors import InvalidInputError
from embedmind.model import Level, Tier
from embedmind.query.scope import Scope
from embedmind.query.where import Clause, parse_where


@dataclass(frozen=True)
class Selection:
    """The visibility rules of one read, validated (build it with :meth:`of`).

    Attributes:
        now: The instant expiry and validity are evaluated at (µs).
        scope: The namespace scope with its link grants, or ``None`` for all.
        where: The parsed ``where`` filter over metadata, or ``None``.
        agent: Only memories written by this agent.
        session_id: Only memories written in this session.
        tags: Only memories carrying every one of these tags (distinct, in order).
        tiers: Only memories in one of these tiers (their values).
        levels: Only memories at one of these levels (their values).
        include_expired: Also memories past their TTL.
        include_forgotten: Also tombstones (never for recall).
        include_superseded: Also memories replaced by a newer version.
        as_of: Time travel: memories valid at this instant (µs), superseded or not.
        grants: Extra ``(namespace, tiers)`` readable through namespace links,
            added to ``scope`` (they widen a scope; with no scope they add nothing).
    """

    now: int
    scope: Scope | None = None
    where: Clause | None = None
    agent: str | None = None
    session_id: str | None = None
    tags: tuple[str, ...] = ()
    tiers: tuple[str, ...] = ()
    levels: tuple[str, ...] = ()
    include_expired: bool = False
    include_forgotten: bool = False
    include_superseded: bool = False
    as_of: int | None = None
    grants: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def of(
        cls,
        now: int,
        namespace: object = None,
        where: Mapping[str, Any] | None = None,
        *,
        agent: str | None = None,
        session_id: str | None = None,
        tags: Sequence[str] = (),
        tiers: Sequence[Tier | str] = (),
        levels: Sequence[Level | str] = (),
        include_expired: bool = False,
        include_forgotten: bool = False,
        include_superseded: bool = False,
        as_of: int | None = None,
        grants: Sequence[tuple[str, Sequence[str]]] = (),
    ) -> Selection:
        """Validate a read's filters as the caller gave them.

        Raises:
            InvalidInputError: When a named filter is malformed.
            InvalidFilterError: When ``where`` is malformed.
        """
        scope = Scope.of(namespace)
        return cls(
            now=now,
            scope=scope,
            agent=None if agent is None else a_str(agent, "agent"),
            session_id=None if session_id is None else a_str(session_id, "session_id"),
            tags=tuple(dict.fromkeys(a_str(v, "tags") for v in _as_list(tags, "tags"))),
            tiers=_enums(Tier, tiers, "tiers"),
            levels=_enums(Level, levels, "levels"),
            include_expired=include_expired,
            include_forgotten=include_forgotten,
            include_superseded=include_superseded,
            as_of=as_of,
            grants=tuple((ns, tuple(t)) for ns, t in grants),
            where=parse_where(where),
        )


def _as_list(values: object, field: str) -> list[Any]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidInputError(field, "expected a list")
    return list(values)


def _enums(enum: type[Tier] | type[Level], values: object, field: str) -> tuple[str, ...]:
    return tuple(_enum_value(enum, v, field) for v in _as_list(values, field))


def _enum_value(enum: type[Tier] | type[Level], value: object, field: str) -> str:
    try:
        return str(enum(value).value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum)
        raise InvalidInputError(field, f"{value!r} is not one of {allowed}") from None
