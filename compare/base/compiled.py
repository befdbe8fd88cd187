"""perfcmp's optional compiled parts (C extensions built at install where there is a compiler:
the Kineto event scan, the workbook's rows): whether one may be used.

Each part's Python side stays the reference and the fallback; ``PERFCMP_PURE_PYTHON=1`` in the
environment chooses it everywhere (benchmarks, A/B checks).
"""

from __future__ import annotations

import os
from types import ModuleType

PURE_PYTHON_VARIABLE = "PERFCMP_PURE_PYTHON"


def usable(module: ModuleType | None, interface: int) -> bool:
    """Whether the compiled ``module`` may be used: built (not None), of the ``interface`` its
    Python side speaks (a stale build beside edited source is not), and not turned off."""
    return (module is not None and getattr(module, "INTERFACE", None) == interface
            and os.environ.get(PURE_PYTHON_VARIABLE, "") in ("", "0"))
