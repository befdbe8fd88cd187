"""perfcmp: compare two AI-training performance profiles.

The package root stays light on purpose: every import of ``perfcmp.readers`` runs it first,
so it must not pull in the CLI, the renderers or pandas-heavy modules. The Python API
(``perfcmp.compare``, ``perfcmp.load_profile``, ``perfcmp.ComparisonResult``; see
``perfcmp.api``) is imported on first use.
"""

from perfcmp.base.version import __version__

__all__ = ["ComparisonResult", "compare", "load_profile", "__version__"]


def __getattr__(name: str):
    if name in ("compare", "load_profile"):
        from perfcmp import api

        return getattr(api, name)
    if name == "ComparisonResult":
        from perfcmp.results.pair import ComparisonResult

        return ComparisonResult
    raise AttributeError(f"module 'perfcmp' has no attribute {name!r}")
