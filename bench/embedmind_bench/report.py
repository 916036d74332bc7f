"""What every benchmark run produces: tables for people and one JSON document.

The JSON has the same top-level keys for every workload (``REQUIRED_KEYS``):
where it ran (``machine``, ``cores``, ``blas``, ``versions``), how it was
asked (``command``, ``config``), and what it measured: ``figures`` (every
number, nested by size and engine), ``ratios`` (flat, ``"a/b"`` names; the
figures that survive a noisy machine) and ``skipped`` (peer -> reason).
Nothing here prints; the CLI decides where text goes.

Example:
    >>> table = Table("demo", ["engine", "p50 ms"])
    >>> table.add("numpy", fmt(1.234, ".2f"))
    >>> table.skip("faiss", "faiss not installed")
    >>> print(table.render())
    demo
    engine | p50 ms
    numpy  |   1.23
    faiss  | skipped: faiss not installed
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedmind_bench import machine as _machine

SCHEMA = "embedmind.bench/1"
REQUIRED_KEYS = (
    "schema",
    "workload",
    "command",
    "started_at",
    "duration_s",
    "machine",
    "cores",
    "versions",
    "blas",
    "config",
    "figures",
    "ratios",
    "skipped",
)


def fmt(value: float | None, spec: str) -> str:
    """Format a figure, or ``-`` when it was not measured.

    Args:
        value: The figure.
        spec: A format spec such as ``".2f"`` or ``",.0f"``.

    Returns:
        The formatted text.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


@dataclass
class Table:
    """A plain-text table; a skipped row spans the columns with its reason.

    Attributes:
        title: The line printed above the table.
        header: Column names; the first column names the row.
        rows: Cells per row (a skipped row has two: name and reason).
        notes: Lines printed under the table.
        spanning: Indexes of the rows that span the columns (skipped or failed).
    """

    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    spanning: set[int] = field(default_factory=set)

    def add(self, *cells: str) -> None:
        """Append a row of already formatted cells."""
        if len(cells) != len(self.header):
            raise ValueError(f"expected {len(self.header)} cells, got {len(cells)}")
        self.rows.append(list(cells))

    def skip(self, name: str, reason: str, *, status: str = "skipped") -> None:
        """Append a row saying why ``name`` did not run (``status``: skipped or failed)."""
        self.spanning.add(len(self.rows))
        self.rows.append([name, f"{status}: {reason}"])

    def render(self) -> str:
        """Return the aligned table as text."""
        full = [self.header] + [r for i, r in enumerate(self.rows) if i not in self.spanning]
        widths = [max(len(row[i]) for row in full) for i in range(len(self.header))]
        widths[0] = max(widths[0], *(len(r[0]) for r in self.rows)) if self.rows else widths[0]
        lines = [self.title]
        for i, row in enumerate([self.header, *self.rows], start=-1):
            if i in self.spanning:
                lines.append(f"{row[0].ljust(widths[0])} | {row[1]}")
                continue
            cells = [row[0].ljust(widths[0])]
            cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
            lines.append(" | ".join(cells).rstrip())
        return "\n".join(lines + self.notes)


@dataclass
class Outcome:
    """What one workload measured.

    Attributes:
        figures: Every number, JSON-ready, nested as the workload likes.
        ratios: Flat ``name -> ratio`` (``None`` when a side did not run).
        tables: What to print, in order.
        skipped: Peers or parts that did not run, with the reason.
        packages: Distributions of the peers compared (their versions are recorded).
        status: ``"ok"``, or ``"skipped"`` when the whole workload could not run.
    """

    figures: dict[str, Any] = field(default_factory=dict)
    ratios: dict[str, float | None] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    packages: tuple[str, ...] = ()
    status: str = "ok"


def _clean(value: Any) -> Any:
    """Make ``value`` JSON-safe: NaN and infinities become ``None``, numpy scalars plain."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()  # numpy scalar
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def build(
    workload: str,
    outcome: Outcome,
    *,
    config: dict[str, Any],
    command: str,
    argv: list[str],
    started: _dt.datetime,
) -> dict[str, Any]:
    """Assemble the JSON document of one run.

    Args:
        workload: ``"lexical"``, ``"vector"``, ...
        outcome: What the workload measured.
        config: The run's settings (sizes, queries, seed, ...).
        command: The command that reproduces the run.
        argv: The arguments as the process received them.
        started: When the run started (timezone-aware).

    Returns:
        A JSON-ready dictionary with every key of ``REQUIRED_KEYS``.
    """
    finished = _dt.datetime.now(_dt.timezone.utc)
    info = _machine.machine()
    report = {
        "schema": SCHEMA,
        "workload": workload,
        "status": outcome.status,
        "command": command,
        "argv": argv,
        "started_at": started.isoformat(),
        "finished_at": finished.isoformat(),
        "duration_s": (finished - started).total_seconds(),
        "machine": info,
        "cores": info["cores"]["logical"],
        "versions": _machine.versions(outcome.packages),
        "blas": _machine.blas(),
        "config": config,
        "figures": outcome.figures,
        "ratios": outcome.ratios,
        "skipped": outcome.skipped,
    }
    cleaned: dict[str, Any] = _clean(report)
    return cleaned


def missing_keys(report: dict[str, Any]) -> list[str]:
    """Return the required top-level keys that ``report`` lacks.

    Args:
        report: A parsed benchmark JSON document.

    Returns:
        The missing keys, in ``REQUIRED_KEYS`` order (empty when valid).
    """
    return [key for key in REQUIRED_KEYS if key not in report]


def default_path(workload: str, label: str, when: _dt.datetime, root: Path) -> Path:
    """Return ``root/build/bench/<workload>-<label>-<UTC timestamp>.json``.

    Args:
        workload: The workload name.
        label: The size label (``"10k"``, ``"10k-100k"``, ``"locomo"``).
        when: The run's start.
        root: Usually the current directory.

    Returns:
        The path (its directory is not created here).
    """
    stamp = when.astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return root / "build" / "bench" / f"{workload}-{label}-{stamp}.json"


def write(path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` to ``path`` as indented JSON, creating the directory.

    Args:
        path: Where to write.
        report: The document from :func:`build`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_clean(report), indent=2, allow_nan=False, default=str)
    path.write_text(text + "\n", encoding="utf-8")
