"""LlamaIndex ``MetadataFilters`` translated into embedmind's ``where``, recursively.

Reference semantics (LlamaIndex): a missing key matches only ``!=`` and
``nin``; ``contains`` means the value is in the stored list; ``any``/``all``
test a stored list; ``is_empty`` is true for a missing key, None, ``""`` and
``[]``; ``text_match`` is a substring test (``text_match_insensitive``
ignoring case). AND, OR and NOT nest to any depth.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

_SIMPLE = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
    FilterOperator.ANY: "$any",
    FilterOperator.ALL: "$all",
    FilterOperator.CONTAINS: "$contains",
    FilterOperator.TEXT_MATCH: "$match",
    FilterOperator.TEXT_MATCH_INSENSITIVE: "$imatch",
}


def to_where(filters: MetadataFilters | None) -> dict[str, Any] | None:
    """Translate (possibly nested) filters; ``None`` or no filters means no restriction."""
    if filters is None or not filters.filters:
        return None
    parts = [_one(f) for f in filters.filters]
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.OR:
        return {"$or": parts}
    if condition == FilterCondition.NOT:
        return {"$not": {"$and": parts}}
    return {"$and": parts}


def _one(item: MetadataFilter | MetadataFilters) -> dict[str, Any]:
    if isinstance(item, MetadataFilters):
        nested = to_where(item)
        return nested if nested is not None else {"$and": [{}]}
    if item.operator == FilterOperator.IS_EMPTY:
        return {item.key: {"$empty": True}}
    value: Any = item.value
    if item.operator in (
        FilterOperator.IN,
        FilterOperator.NIN,
        FilterOperator.ANY,
        FilterOperator.ALL,
    ):
        value = list(value) if isinstance(value, list | tuple) else [value]
    return {item.key: {_SIMPLE[item.operator]: value}}
