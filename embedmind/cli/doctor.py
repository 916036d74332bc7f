"""``embedmind doctor``: what this installation has and whether it works."""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
from collections.abc import Callable

import apsw

from embedmind import plugins
from embedmind.embedders.cache import cache_dir

PACKAGES = ("embedmind", "apsw", "numpy", "usearch", "onnxruntime", "tokenizers", "pluggy")


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def report(out: Callable[[str], None]) -> int:
    """Print the report; return the number of problems found."""
    problems = 0
    out(f"python      {platform.python_version()} ({platform.machine()})")
    for name in PACKAGES:
        out(f"{name:<11} {_version(name)}")
    out(f"sqlite      {apsw.sqlitelibversion()} (bundled by apsw)")
    registry = plugins.registry()
    out(f"embedders   {', '.join(sorted(registry.embedders))}")
    out(f"chunkers    {', '.join(sorted(registry.chunkers))}")
    out(f"cache       {cache_dir()}")
    try:
        embedder = plugins.resolve_embedder("default")
        variant = getattr(embedder, "variant", "?")
        out(f"default     {embedder.model_id} ({embedder.dims} dims, variant {variant})")
    except Exception as e:  # doctor reports, it does not crash
        problems += 1
        out(f"default     FAILED: {e}")
    out(f"plugins     loaded: {', '.join(registry.loaded) or 'none'}")
    for name, error in registry.failed.items():
        problems += 1
        out(f"plugin      {name} FAILED: {error}")
    for name, info in sorted(registry.adapters.items()):
        framework = str(info.get("framework", "?"))
        try:
            importlib.import_module(framework)
            status = "importable"
        except ImportError:
            status = "not installed"
        out(f"adapter     {name}: framework {framework} {status}")
    return problems
