"""How the CLI shows results: JSON-ready values and the human lines of a recall."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
from collections.abc import Iterator
from typing import Any

from embedmind.model import Memory, Mode, Recall


def jsonable(value: Any) -> Any:
    """``value`` with dataclasses, datetimes and enums turned into JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, _dt.datetime):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    return value


def describe(memory: Memory) -> str:
    """One memory on one line: id, namespace, content and metadata."""
    extra = f"  {json.dumps(memory.metadata, ensure_ascii=False)}" if memory.metadata else ""
    return f"{memory.id}  [{memory.namespace}]  {memory.content}{extra}"


def list_line(memory: Memory, width: int = 80) -> str:
    """One memory for ``embedmind list``: id, creation time, namespace, the content's start.

    The content is on one line (its whitespace runs become one space) and cut
    to ``width`` characters, an ellipsis marking the cut.
    """
    text = " ".join(memory.content.split())
    snippet = text if len(text) <= width else text[: width - 1] + "\u2026"
    when = memory.created_at.isoformat(timespec="seconds")
    return f"{memory.id}  {when}  [{memory.namespace}]  {snippet}"


def recall_lines(result: Recall, *, explain: bool) -> Iterator[str]:
    """The human lines of a recall.

    ``explain`` adds each hit's channel ranks (with the query terms a text hit
    matched only through session context, and the sub-query that widened it
    in) and a timings footer.
    """
    for note in result.degraded:
        yield f"note: {note}"
    for hit in result:
        yield f"{hit.rank:>3}. {hit.score:.4f}  {describe(hit.memory)}"
        if explain:
            for name, channel in hit.channels.items():
                via = channel.via_context
                context = f"  via context: {', '.join(via)}" if via else ""
                if channel.via_widening:
                    context += f"  via widening: {', '.join(channel.via_widening)}"
                yield f"       {name:<8} #{channel.rank:<4} raw {channel.raw:.4f}{context}"
    if not result:
        yield "no memories matched"
    if explain:
        ran = ", ".join(result.channels) or "none"
        timings = ", ".join(f"{phase} {ms:.2f} ms" for phase, ms in (result.timings or {}).items())
        yield f"mode {Mode(result.mode).value}; channels {ran}; timings {timings or 'none'}"
