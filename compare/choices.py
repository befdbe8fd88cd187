"""The command line's fixed choices, in a module that imports nothing: the CLI builds its options
from them before any command runs, so ``perfcmp --version`` and ``--help`` load no analysis code."""

FORMATS = ("console", "xlsx", "json", "md", "html")
DEFAULT_FORMATS = ("console", "xlsx")
HISTORY_FORMATS = FORMATS  # perfcmp history writes every format compare does

DIMENSIONS = ("profiling", "operator", "memory", "communication", "api", "kernel")
