"""The compiled parts of perfcmp, optional: the scan of Kineto trace events (``readers/_eventscan.c``)
and the workbook's rows into XML (``compare/render/_sheetxml.c``).

Everything else is in pyproject.toml. Without a C compiler the install goes on without them
(``optional=True``): the reader and the workbook writer then take their pure-Python paths,
which give the same results.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("perfcmp.readers._eventscan", ["readers/_eventscan.c"], optional=True,
                             # the timestamps' arithmetic exactly as numpy's (no fused multiply-add)
                             extra_compile_args=["-ffp-contract=off"]),
                   Extension("perfcmp.render._sheetxml", ["compare/render/_sheetxml.c"], optional=True)])
