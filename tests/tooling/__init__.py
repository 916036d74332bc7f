"""Child-process programs for the crash and multi-process tests.

They are run by file path (``python tests/tooling/<name>.py ...``) with the
repository root on ``PYTHONPATH``, so they need no installation and do not
depend on ``tests`` being a package. Each program is self-contained.
"""
