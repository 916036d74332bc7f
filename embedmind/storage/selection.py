"""Which memories a read may see, compiled to one parameterised SQL condition.

A :class:`Selection` gathers the named filters (namespace scope, agent,
session, tags, tiers, levels, expiry, forgotten, supersession, ``as_of``) and
the ``where`` filter. Every read path — text recall, vector recall, ``iter``,
``stats`` — applies the same compiled condition, so a memory is visible
through one path exactly when it is visible through all of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from embedmind.checks import no_surrogates
from embedmind.errors import InvalidInputError
from embedmind.filters import compile_where
from embedmind.model import Level, Tier
from embedmind.namespaces import compile_scope


@dataclass(frozen=True)
class Selection:
    """The visibility rules of one read.

    Attributes:
        now: The instant expiry and validity are evaluated at (µs).
        namespace: Namespace scope (see :data:`embedmind.model.NamespaceScope`).
        where: A ``where`` filter over metadata.
        agent: Only memories written by this agent.
        session_id: Only memories written in this session.
        tags: Only memories carrying every one of these tags.
        tiers: Only memories in one of these tiers.
        levels: Only memories at one of these levels.
        include_expired: Also memories past their TTL.
        include_forgotten: Also tombstones (never for recall).
        include_superseded: Also memories replaced by a newer version.
        as_of: Time travel: memories valid at this instant (µs), superseded or not.
    """

    now: int
    namespace: str | Sequence[str] | None = None
    where: Mapping[str, Any] | None = None
    agent: str | None = None
    session_id: str | None = None
    tags: Sequence[str] = ()
    tiers: Sequence[Tier | str] = ()
    levels: Sequence[Level | str] = ()
    include_expired: bool = False
    include_forgotten: bool = False
    include_superseded: bool = False
    as_of: int | None = None
    grants: Sequence[tuple[str, Sequence[str]]] = ()
    """Extra ``(namespace, tiers)`` readable through namespace links."""

    def compile(self, alias: str = "m") -> tuple[str, list[Any]]:
        """Compile to ``(condition, params)`` over the memories table aliased ``alias``.

        Raises:
            InvalidInputError: When a named filter is malformed.
            InvalidFilterError: When ``where`` is malformed.
        """
        base, params = self._base(alias)
        compiled = compile_where(self.where, f"{alias}.metadata")
        if compiled is None:
            return base, params
        # The CASE order is the contract: rows outside the base selection are
        # never type-checked, and every row inside it is checked before its
        # match is decided, so FilterTypeError does not depend on the plan.
        sql = (
            f"{base} AND (CASE WHEN NOT {base} THEN 0 WHEN {compiled.check} THEN 0 "
            f"ELSE {compiled.match} END)"
        )
        return sql, [*params, *params, *compiled.check_params, *compiled.match_params]

    def _base(self, m: str) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if not self.include_forgotten:
            clauses.append(f"{m}.forgotten_at IS NULL")
        if not self.include_expired:
            clauses.append(f"({m}.expires_at IS NULL OR {m}.expires_at > ?)")
            params.append(self.now)
        if self.as_of is not None:
            clauses.append(f"{m}.valid_from <= ? AND ({m}.valid_to IS NULL OR {m}.valid_to > ?)")
            params += [self.as_of, self.as_of]
        elif not self.include_superseded:
            clauses.append(f"{m}.superseded_by IS NULL")
            clauses.append(f"({m}.valid_to IS NULL OR {m}.valid_to > ?)")
            params.append(self.now)
        scope_sql, scope_params = compile_scope(self.namespace, f"{m}.namespace")
        for namespace, tiers in self.grants:
            marks = ", ".join("?" * len(tiers))
            scope_sql = f"({scope_sql} OR ({m}.namespace = ? AND {m}.tier IN ({marks})))"
            scope_params = [*scope_params, namespace, *tiers]
        clauses.append(scope_sql)
        params += scope_params
        if self.agent is not None:
            clauses.append(f"{m}.agent = ?")
            params.append(_text(self.agent, "agent"))
        if self.session_id is not None:
            clauses.append(f"{m}.session_id = ?")
            params.append(_text(self.session_id, "session_id"))
        for tag in _unique_texts(self.tags, "tags"):
            clauses.append(
                f"EXISTS (SELECT 1 FROM memory_tags t WHERE t.tag = ? AND t.key = {m}.key)"
            )
            params.append(tag)
        for column, values, enum in (("tier", self.tiers, Tier), ("level", self.levels, Level)):
            if values:
                names = [_enum_value(enum, v, column + "s") for v in _as_list(values, column + "s")]
                clauses.append(f"{m}.{column} IN ({', '.join('?' * len(names))})")
                params += names
        return "(" + " AND ".join(clauses) + ")", params


def _as_list(values: object, field: str) -> list[Any]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidInputError(field, "expected a list")
    return list(values)


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or "\x00" in value:
        raise InvalidInputError(field, "expected a str without NUL")
    return no_surrogates(value, field)  # SQLite binds UTF-8: a lone surrogate is a raw error


def _unique_texts(values: Sequence[str], field: str) -> list[str]:
    return list(dict.fromkeys(_text(v, field) for v in _as_list(values, field)))


def _enum_value(enum: type[Tier] | type[Level], value: object, field: str) -> str:
    try:
        return str(enum(value).value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum)
        raise InvalidInputError(field, f"{value!r} is not one of {allowed}") from None
