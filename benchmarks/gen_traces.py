#!/usr/bin/env python3
"""Command line of the tests' trace simulator (``tests/simulator``), kept at this path for the benchmarks
and the commands in docs/ and benchmarks/README.md:

    python benchmarks/gen_traces.py gpu OUT.pt.trace.json --steps 3 --layers 2 --seed 0
    python benchmarks/gen_traces.py npu OUT_DIR_ascend_pt --steps 3 --layers 2
    python benchmarks/gen_traces.py describe gpu --steps 3 --layers 2
    python benchmarks/gen_traces.py selfcheck --dir scratch [--big]

Python code imports the package instead: ``from simulator import write_gpu_trace`` with ``tests/`` on the path.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from simulator.cli import main  # noqa: E402  (the path above first)

if __name__ == "__main__":
    sys.exit(main())
