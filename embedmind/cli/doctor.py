"""``embedmind doctor``: what this installation has and whether it works.

With ``--verify`` (and ``--store``: a file, or a URL whose backend says the
store is there) it also scans a SQLite store in full
(:func:`embedmind.verification.verify`): every memory row decodes and matches
its fingerprint, the index files match their registry, and SQLite's
``integrity_check`` passes. Damaged memories are listed by id and the exit
code is non-zero. With ``--json`` the same facts are printed as one JSON object.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import platform
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from embedmind import plugins, verification
from embedmind.backend.locations import masked
from embedmind.backend.sqlite.connection import sqlite_version
from embedmind.cli import global_options
from embedmind.embedders.cache import cache_dir
from embedmind.errors import EmbedmindError, InvalidInputError, NotFoundError
from embedmind.verification import VerifyReport

EXIT_OK, EXIT_NOT_FOUND, EXIT_INVALID, EXIT_PROBLEMS = 0, 1, 2, 4
"""The CLI's exit codes (``embedmind.cli.main``): problems found count as storage failures."""

PACKAGES = ("embedmind", "apsw", "numpy", "usearch", "onnxruntime", "tokenizers", "pluggy")


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def report(out: Callable[[str], None]) -> int:
    """Print the report; return the number of problems found."""
    facts, problems = environment()
    for key, value in facts:
        out(f"{key:<11} {value}")
    return len(problems)


def environment() -> tuple[list[tuple[str, str]], list[str]]:
    """What this installation has, as ``(label, value)`` lines, and the problems among them."""
    problems: list[str] = []
    facts = [("python", f"{platform.python_version()} ({platform.machine()})")]
    facts += [(name, _version(name)) for name in PACKAGES]
    facts.append(("sqlite", f"{sqlite_version()} (bundled by apsw)"))
    registry = plugins.registry()
    facts.append(("embedders", ", ".join(sorted(registry.embedders))))
    facts.append(("chunkers", ", ".join(sorted(registry.chunkers))))
    facts.append(("cache", str(cache_dir())))
    try:
        embedder = plugins.resolve_embedder("default")
        variant = getattr(embedder, "variant", "?")
        facts.append(("default", f"{embedder.model_id} ({embedder.dims} dims, variant {variant})"))
    except Exception as e:  # doctor reports, it does not crash
        problems.append(f"default embedder: {e}")
        facts.append(("default", f"FAILED: {e}"))
    facts.append(("plugins", f"loaded: {', '.join(registry.loaded) or 'none'}"))
    for name, error in registry.failed.items():
        problems.append(f"plugin {name}: {error}")
        facts.append(("plugin", f"{name} FAILED: {error}"))
    for name, info in sorted(registry.adapters.items()):
        framework = str(info.get("framework", "?"))
        try:
            importlib.import_module(framework)
            status = "importable"
        except ImportError:
            status = "not installed"
        facts.append(("adapter", f"{name}: framework {framework} {status}"))
    return facts, problems


def run(out: Callable[[str], None], *, store: str | None, verify: bool, as_json: bool) -> int:
    """Run ``embedmind doctor``: print the report (and the scan); return the exit code.

    Args:
        out: Prints one line (or, with ``as_json``, the one JSON document).
        store: The store to scan; needed with ``verify``. Never created.
        verify: Scan the store in full.
        as_json: Print one JSON object instead of text.

    Returns:
        0 when everything is sound; 4 when a problem or a damaged memory was
        found; 1 when the store does not exist; 2 when ``verify`` has no store,
        or one it cannot scan (a PostgreSQL store: the scan reads SQLite's file).
    """
    facts, problems = environment()
    document: dict[str, Any] = {
        "environment": [{"name": k, "value": v} for k, v in facts],
        "problems": problems,
        "verify": None,
    }
    if not as_json:
        for key, value in facts:
            out(f"{key:<11} {value}")
    code = EXIT_PROBLEMS if problems else EXIT_OK
    if verify:
        scanned, error, error_code = _scan(store)
        if error is not None:
            document["error"] = error
            code = error_code
        elif scanned is not None:
            document["verify"] = _as_dict(scanned)
            if not scanned.ok:
                code = EXIT_PROBLEMS
        if not as_json:
            _print_scan(out, scanned, error)
    if as_json:
        document["ok"] = code == EXIT_OK
        out(json.dumps(document, ensure_ascii=False, separators=(",", ":")))
    return code


def command(store: str, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    """``embedmind doctor [--verify]``: :func:`run` with the CLI's ``--store`` and ``--json``."""
    return run(out, store=store if args.verify else None, verify=args.verify, as_json=args.json)


def _scan(store: str | None) -> tuple[VerifyReport | None, str | None, int]:
    """Open and verify ``store``: ``(report, error, exit code on error)``."""
    if store is None:
        return None, "doctor --verify needs a store: pass --store FILE.mind", EXIT_INVALID
    from embedmind.store import Store  # imported here: the report works without a store

    try:
        # The store's backend says whether it is there (a file, or a server's
        # schema), as for every reading command; nothing is ever created.
        global_options.require_store(store)
        with Store.open(store, embedder=None) as opened:
            return verification.verify(opened), None, EXIT_OK
    except NotFoundError as e:
        return None, str(e), EXIT_NOT_FOUND
    except InvalidInputError as e:  # not a store location, or a backend verify cannot scan
        return None, f"cannot verify {masked(store)!r}: {e}", EXIT_INVALID
    except EmbedmindError as e:
        return None, f"cannot verify {masked(store)!r}: {e}", EXIT_PROBLEMS


def _as_dict(scanned: VerifyReport) -> dict[str, Any]:
    fields = asdict(scanned)
    fields["ok"] = scanned.ok
    return fields


def _print_scan(
    out: Callable[[str], None], scanned: VerifyReport | None, error: str | None
) -> None:
    if error is not None:
        out(f"error: {error}")
        return
    if scanned is None:
        return
    out(f"rows        {scanned.rows} scanned, {len(scanned.damaged)} damaged")
    for damaged in scanned.damaged:
        out(f"damaged     {damaged.id}: {damaged.reason}")
    if scanned.damaged:
        out(
            "repair      restore them from an export or backup, or "
            "`embedmind forget ID` / redact them"
        )
    out(f"integrity   {'; '.join(scanned.integrity)}")
    for state in scanned.index_files:
        note = "" if state.state == "ok" else " (rebuilt from the store at the next open)"
        out(f"index       {state.name}: {state.state}{note}")
    out(f"verify      {'ok' if scanned.ok else 'PROBLEMS FOUND'}")
