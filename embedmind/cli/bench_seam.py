"""``embedmind bench``: the benchmarks live in the ``embedmind-bench`` distribution.

The engine ships no benchmark code. When ``embedmind_bench`` is importable its
``embedmind_bench.cli.add_parser`` registers the ``bench`` command with every
workload, option and help text; otherwise ``bench`` takes any arguments and
exits with one line that names what to install.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from typing import Any

from embedmind.errors import InvalidInputError

HELP = "benchmarks beside anchors and peers: tables and JSON"
"""``bench``'s line in ``embedmind --help`` (``embedmind_bench.cli`` gives the same)."""
EXIT_SKIPPED = 5
"""``embedmind bench``'s exit code for a workload that cannot run here."""
PACKAGE = "embedmind_bench"
FIX = (
    "the benchmarks are the embedmind-bench distribution: pip install embedmind-bench "
    '(peers too: pip install "embedmind-bench[peers]"; from a clone of the '
    "repository: pip install -e bench/)"
)


def _installed() -> bool:
    """Whether ``embedmind_bench`` can be imported (a blocked import counts as absent)."""
    try:
        return importlib.util.find_spec(PACKAGE) is not None
    except (ImportError, ValueError):  # a None entry in sys.modules raises ValueError
        return False


def add_parser(commands: Any, *, load: bool = True) -> None:
    """Register ``bench`` on the CLI's subcommands: the real one, or the one that says why not.

    Args:
        commands: The ``add_subparsers()`` object of the ``embedmind`` parser.
        load: Import the benchmarks' parser when they are installed. ``False``
            registers its help line alone: ``main`` passes it when no argument
            is ``bench``, since importing the benchmarks loads numpy.
    """
    reason = FIX
    if _installed():
        if not load:
            commands.add_parser("bench", help=HELP)
            return
        try:
            cli = importlib.import_module(f"{PACKAGE}.cli")
        except ImportError as e:
            # Every command builds this parser: a broken benchmark install must
            # cost only `bench`, never `remember` or `recall`.
            reason = f"{PACKAGE} is installed but does not import ({e}); reinstall it: {FIX}"
        else:
            cli.add_parser(commands)
            return
    bench = commands.add_parser(
        "bench",
        help="benchmarks beside anchors and peers (pip install embedmind-bench)",
        description=f"Not available: {reason}.",
    )
    bench.add_argument("words", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    bench.set_defaults(run=_missing, raw_path=True, missing_reason=reason)


def _missing(store_path: str, args: argparse.Namespace, out: Any) -> int:
    """Refuse every workload in one line: the package that runs them is not importable.

    Raises:
        InvalidInputError: Always, naming the distribution to install.
    """
    del store_path, out
    raise InvalidInputError("bench", args.missing_reason)
