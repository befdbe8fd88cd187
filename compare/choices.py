"""The command line's fixed choices, in a module that imports nothing: the CLI builds its options
from them before any command runs, so ``perfcmp --version`` and ``--help`` load no analysis code."""

FORMATS = ("console", "xlsx", "json", "md", "html", "trace")
DEFAULT_FORMATS = ("console", "xlsx")
HISTORY_FORMATS = tuple(f for f in FORMATS if f != "trace")  # history writes every format compare does; a trace is of one pair

DIMENSIONS = ("profiling", "operator", "memory", "communication", "api", "kernel")
STDOUT = "-"  # ``-o -``: the one text output goes to stdout
