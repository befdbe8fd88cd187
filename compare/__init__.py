"""perfcmp: compare two AI-training performance profiles.

The package root stays light on purpose: every import of ``perfcmp.readers`` runs it first,
so it must not pull in the CLI, the renderers or pandas-heavy modules.
"""

__version__ = "0.1.0"
