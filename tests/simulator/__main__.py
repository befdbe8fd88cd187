"""``python -m simulator ...`` (from ``tests/``): the simulator's command line."""

import sys

from .cli import main

sys.exit(main())
