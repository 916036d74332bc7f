"""The ``embedmind`` command line."""

from embedmind.cli.main import main

__all__ = ["main"]
