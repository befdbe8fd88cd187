"""The ground floor: what every other part of perfcmp stands on, and nothing of perfcmp beneath it.

Each module here imports only the standard library, numpy and pandas — never another perfcmp
package — so readers, the comparison, the renderers and the commands can all use it without an
import cycle, and ``perfcmp --version`` pays for no more than it prints.

- ``version``: the package version.
- ``errors``: the error types every command turns into one line on stderr, and their exit codes.
- ``textmatch``: vectorised text columns (name normalisation, prefix and pattern matching).
- ``heap``: the allocator and the garbage collector around large reads.
- ``procs``: the executor, the one place that starts processes: a job run beside this one (``Beside``)
  and units mapped over local workers or Dask (``map_units``), their hand-over and their death.
- ``fatal``: a fatal signal in a worker (SIGBUS on a mapped input) said as one line.
- ``signals``: SIGINT / SIGTERM turned into an exception so a stopped run cleans up.
- ``intervals``: exact interval arithmetic on sorted µs spans (union, intersection, coverage).
- ``compiled``: whether an optional C extension (the event scan, the workbook's rows) may be used.
"""
