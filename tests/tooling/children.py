"""How the reliability tests start the child programs of this package (in the parent)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def child_env() -> dict[str, str]:
    """The test's environment, with the repository importable and warnings as errors."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONWARNINGS"] = "error"
    return env


def spawn(
    tool: Path, workdir: Path, name: str, *args: object
) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """Start ``tool`` with ``args``, its stdout and stderr in ``workdir/name.out|.err``."""
    out, err = workdir / f"{name}.out", workdir / f"{name}.err"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen(
            [sys.executable, str(tool), *map(str, args)], stdout=o, stderr=e, env=child_env()
        )
    return proc, out, err


def start_together(
    sync: Path,
    children: Sequence[tuple[subprocess.Popen[bytes], Path, Path]],
    stages: Sequence[str] = ("open", "start"),
    *,
    lead: float = 0.3,
    timeout: float = 120.0,
) -> None:
    """Release ``children`` into each stage at one instant, once every one of them reached it.

    A child reaching ``stage`` touches ``{sync}.{stage}.{pid}`` and waits for
    ``{sync}.{stage}``, which holds the wall-clock instant it goes on at
    (``mp_workers._meet``). Children started at one instant are ready at very
    different ones on a loaded machine (importing takes seconds), so an instant fixed
    beforehand may already be past; this one is named ``lead`` seconds after the last
    child is ready.

    Raises:
        AssertionError: When a child exits, or they are not all ready within ``timeout``.
    """
    for stage in stages:
        deadline = time.monotonic() + timeout
        while len(list(sync.parent.glob(f"{sync.name}.{stage}.*"))) < len(children):
            for proc, _, err in children:
                assert proc.poll() is None, f"a child exited before {stage}:\n{err.read_text()}"
            assert time.monotonic() < deadline, f"the children did not reach {stage} in {timeout} s"
            time.sleep(0.01)
        named = sync.parent / f".{sync.name}.{stage}.tmp"
        named.write_text(repr(time.time() + lead))
        named.rename(f"{sync}.{stage}")  # atomic: a child never reads half an instant
