"""perfcmp's version: one place, read by the package root and by the build (pyproject's dynamic version)."""

__version__ = "0.1.0"
