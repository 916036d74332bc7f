"""Describe where a benchmark ran: machine, interpreter, versions and kernels.

On a shared machine an absolute time means little, so every report carries
what is needed to judge it: the CPU model and core count, the load when the
run started, the version of every package compared, the BLAS kernel numpy
actually dispatched to (OpenBLAS picks one at load time, and
``OPENBLAS_CORETYPE`` can force a slower one: 400 vs 216 GFLOP/s here), the
CPU's vector extensions and the kernel usearch picked for the store's graph.
The model name alone hides the last two: "AMD EPYC" machines of this class
came both with AVX-512 (usearch's ``genoa`` kernels) and without it
(``haswell``). On one without it, the embedder ran at about a tenth of the
rate it had on one with it (80 against 800 texts/s), and a raw usearch build
of 100k took about 2.8 times as long.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import resource
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# Environment that changes how BLAS and OpenMP threads behave; recorded with the kernel.
THREAD_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY")
# Always reported; a workload adds the peers it compared.
CORE_PACKAGES = ("embedmind", "numpy", "usearch", "onnxruntime", "apsw", "tokenizers")
SIMD_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_int8")
"""The CPU extensions the engine's kernels use when present (``/proc/cpuinfo`` flags):
usearch's distances and onnxruntime's int8 matrix products."""


def package_version(name: str) -> str | None:
    """Return the installed version of distribution ``name``, or ``None``.

    Args:
        name: A distribution name such as ``"chromadb"``.

    Returns:
        The version string, or ``None`` when it is not installed.
    """
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions(extra: Iterable[str] = ()) -> dict[str, str | None]:
    """Return the versions of the core packages, SQLite and ``extra`` peers.

    Args:
        extra: Distribution names of the peers a workload compared.

    Returns:
        ``{name: version or None}``; ``sqlite`` is the library apsw bundles.
    """
    found = {name: package_version(name) for name in (*CORE_PACKAGES, *extra)}
    apsw = importlib.import_module("apsw")
    found["sqlite"] = apsw.sqlite_lib_version()
    return found


def _cpuinfo() -> str:
    """The text of ``/proc/cpuinfo`` (empty on a platform without it)."""
    with_info = Path("/proc/cpuinfo")
    return with_info.read_text(errors="replace") if with_info.exists() else ""


def _first(cpuinfo: str, name: str) -> str | None:
    """The value of the first ``name : value`` line of ``cpuinfo`` (the first CPU's)."""
    for line in cpuinfo.splitlines():
        if line.startswith(name):
            return line.split(":", 1)[1].strip()
    return None


def _cpu_model(cpuinfo: str) -> str:
    """Return the CPU model name (from ``cpuinfo`` on Linux, else what platform says)."""
    return _first(cpuinfo, "model name") or platform.processor() or platform.machine()


def simd(cpuinfo: str) -> list[str]:
    """Return which of :data:`SIMD_FLAGS` the first CPU of ``cpuinfo`` has, in that order.

    Args:
        cpuinfo: The text of ``/proc/cpuinfo``.

    Returns:
        The flags present; empty when the text names none (another platform).
    """
    present = set((_first(cpuinfo, "flags") or "").split())
    return [flag for flag in SIMD_FLAGS if flag in present]


def graph_kernel() -> str | None:
    """Return the kernel usearch dispatches for the store's graph (cosine over float16).

    Asked for the default model's dimensions.

    Made through the engine's own import of usearch (which imports
    onnxruntime first: the other order crashes the interpreter).

    Returns:
        For example ``"haswell"`` or ``"genoa"``; ``None`` without usearch.
    """
    try:
        from embedmind.backend.sqlite import hnsw
        from embedmind.embedders.minilm import MiniLMEmbedder

        index = hnsw._usearch_index()(ndim=MiniLMEmbedder.dims, metric="cos", dtype="f16")
    except ImportError:
        return None
    return str(index.hardware_acceleration)


def disk_read_kb() -> float:
    """Return what this process has read from the disk so far, in KB.

    Only reads the page cache did not serve (``ru_inblock``, in 512-byte
    blocks): the difference around a call says whether it waited on the disk.
    """
    return resource.getrusage(resource.RUSAGE_SELF).ru_inblock / 2


def _ram_bytes() -> int | None:
    """Return the physical memory size, when the platform says."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def cores() -> dict[str, int | None]:
    """Return the logical core count and how many this process may use.

    Returns:
        ``{"logical": ..., "usable": ...}``.
    """
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"logical": os.cpu_count(), "usable": usable}


def blas() -> dict[str, Any]:
    """Describe numpy's BLAS and the kernel it runs.

    With threadpoolctl (in the ``bench`` extra) the live libraries are read,
    kernel included; without it only numpy's build information is known.

    Returns:
        ``library``, ``version``, ``kernel``, ``threads``, ``source`` (how it
        was found), the ``THREAD_ENV`` variables and the raw ``pools``.
    """
    numpy = importlib.import_module("numpy")
    info: dict[str, Any] = {name: os.environ.get(name) for name in THREAD_ENV}
    try:
        pools = importlib.import_module("threadpoolctl").threadpool_info()
    except ImportError:
        build = numpy.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
        info.update(library=build.get("name"), version=build.get("version"), kernel=None)
        info.update(threads=None, source="numpy.show_config (install threadpoolctl for the kernel)")
        return info
    # numpy's own BLAS lives in numpy.libs; other packages (faiss) may load another.
    mine = [p for p in pools if p.get("user_api") == "blas" and "numpy" in p.get("filepath", "")]
    mine = mine or [p for p in pools if p.get("user_api") == "blas"]
    first = mine[0] if mine else {}
    info.update(
        library=first.get("internal_api"),
        version=first.get("version"),
        kernel=first.get("architecture"),
        threads=first.get("num_threads"),
        source="threadpoolctl",
        pools=pools,
    )
    return info


def machine() -> dict[str, Any]:
    """Describe the machine and the interpreter.

    Returns:
        A JSON-ready dictionary: platform, CPU model and vector extensions,
        usearch's kernel for the store's graph, cores, RAM, Python, and the
        load average when the run started (other jobs skew times).
    """
    cpuinfo = _cpuinfo()
    return {
        "platform": platform.platform(),
        "cpu_model": _cpu_model(cpuinfo),
        "simd": simd(cpuinfo),
        "graph_kernel": graph_kernel(),
        "machine": platform.machine(),
        "cores": cores(),
        "ram_bytes": _ram_bytes(),
        "python": sys.version.split()[0],
        "python_full": sys.version,
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def summary(info: dict[str, Any], blas_info: dict[str, Any]) -> str:
    """Return the one-line description printed above every table.

    Args:
        info: :func:`machine`'s result.
        blas_info: :func:`blas`'s result.

    Returns:
        For example ``"Intel Xeon (avx2 avx512f), 2 cores, 23.5 GiB, Python
        3.11.7, BLAS openblas 0.3.31 kernel SkylakeX (2 threads), usearch
        kernel skylake, load 1.2"``.
    """
    flags = info.get("simd") or []
    simd_text = f" ({' '.join(flags)})" if flags else ""
    graph = info.get("graph_kernel") or "unknown"
    ram = info.get("ram_bytes")
    ram_text = f"{ram / 2**30:.1f} GiB" if ram else "RAM ?"
    kernel = blas_info.get("kernel") or "unknown kernel"
    load = info.get("load_average")
    load_text = f", load {load[0]:.2f}" if load else ""
    return (
        f"{info['cpu_model']}{simd_text}, {info['cores']['logical']} cores, {ram_text}, "
        f"Python {info['python']}, BLAS {blas_info.get('library')} {blas_info.get('version')} "
        f"kernel {kernel} ({blas_info.get('threads')} threads), usearch kernel {graph}"
        f"{load_text}"
    )
