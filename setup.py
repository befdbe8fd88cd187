"""The compiled part of perfcmp, optional: the scan of Kineto trace events (``readers/_eventscan.c``).

Everything else is in pyproject.toml. Without a C compiler the install goes on without it
(``optional=True``) and the readers use their pure-Python path, which gives the same results.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("perfcmp.readers._eventscan", ["readers/_eventscan.c"], optional=True,
                             # the timestamps' arithmetic exactly as numpy's (no fused multiply-add)
                             extra_compile_args=["-ffp-contract=off"])])
