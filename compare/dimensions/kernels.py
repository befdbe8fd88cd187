"""Kernels: compute kernels keyed by kernel name and shapes (KernelCompare) or by op type and
core type (KernelTypeCompare, ``--use_kernel_type``), from ``perfcmp.details.kernels``; the
verdict tests ``kernel:<key>`` samples, the gates select them by ``kernel:<pattern>``."""

import pandas as pd

from perfcmp.details.extract import SideDetails
from perfcmp.details.kernels import kernel_notes, kernel_sheets
from perfcmp.dimensions import Built, Dimension, Notable, Sides, left_out
from perfcmp.keys import KERNEL
from perfcmp.results.pair import STATISTIC, TYPES
from perfcmp.samples import in_steps

SHEETS = ("KernelCompare", "KernelTypeCompare")


def build(sides: Sides) -> Built:
    """The kernel sheet the options choose (µs per kernel key), and notes on what it lacks."""
    base, comp, opts = sides.base, sides.comp, sides.opts
    name = SHEETS[1] if opts.use_kernel_type else SHEETS[0]
    sheets, notes = left_out(kernel_sheets(base, comp, opts, sides.pairs), name, "neither profile has compute kernels")
    return sheets, notes + (kernel_notes(base, comp, opts, name) if sheets else [])


def samples(details: SideDetails, windows: list[tuple[float, float]], op_shapes: bool) -> pd.DataFrame:
    """The compute kernels starting in a step: step (position), key (the kernel key), start,
    value = duration (µs)."""
    return in_steps(details.compute, windows)


DIMENSION = Dimension(name="kernels", order=60, option="kernel", tables={STATISTIC: SHEETS[0], TYPES: SHEETS[1]},
                      key=KERNEL, samples=samples, selector=KERNEL, selector_rank=3, build=build, stage=1,
                      reads_compute=True, aside=True,
                      notable=(Notable("kernels", 2, STATISTIC, ("kernel", "input_shape"), "base_total_us",
                                       "comp_total_us", join=True),
                               Notable("kernel types", 3, TYPES, ("kernel_type", "core_type"), "base_total_us",
                                       "comp_total_us", join=True)))
