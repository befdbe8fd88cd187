"""``python -m perfcmp``: the same entry point as the ``perfcmp`` console script."""

from perfcmp.cli import run

run()
