"""How the reliability tests start the child programs of this package (in the parent)."""

from __future__ import annotations

import os
import subprocess
import sys
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
