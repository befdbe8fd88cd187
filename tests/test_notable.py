"""The notable changes: detail rows clearing the verdict's floors, found once by the analysis
(``ComparisonResult.notable``) for the console and the HTML report to format."""

from perfcmp.options import CompareOptions
from perfcmp.pipeline import run


def _pair(small_gpu_trace, comp_kernel_us: float):
    """Two steps a side, one aten::mm a step launching one kernel: 10 µs (base) vs ``comp_kernel_us``."""
    base = small_gpu_trace("base.pt.trace.json")
    comp = small_gpu_trace("comp.pt.trace.json", kernel_us=comp_kernel_us)
    return run(CompareOptions(base_path=str(base), comp_path=str(comp)))


def test_a_change_above_the_floors_is_notable_in_whole_profile_totals(small_gpu_trace):
    # mm: 2 × 10 = 20 µs -> 2 × 40 = 80 µs: +60 µs over 2 steps clears 20 µs per step (40 µs)
    changes = _pair(small_gpu_trace, 40.0).notable()
    found = {d.title: d for d in changes.dimensions}
    ops = found["operators"]
    assert [(c.name, c.base, c.comp, c.diff) for c in ops.regressions] == [("aten::mm", 20.0, 80.0, 60.0)]
    assert ops.improvements == [] and not ops.memory
    assert [(c.base, c.comp) for c in found["kernels"].regressions] == [(20.0, 80.0)]
    assert found["host APIs"].regressions == []  # cudaLaunchKernel 5 µs a step on both sides
    assert changes.thresholds.absolute_us == 20.0


def test_a_change_below_the_absolute_floor_is_not_notable(small_gpu_trace):
    # mm: 20 -> 50 µs: +30 µs over 2 steps is below 20 µs per step (40 µs), though +150 %
    from perfcmp.render import top_changes

    result = _pair(small_gpu_trace, 25.0)
    assert all(not d.regressions and not d.improvements for d in result.notable().dimensions)
    blocks, quiet = top_changes.select(result, 10)
    assert blocks == [] and quiet == ["operators", "kernels", "host APIs"]


def test_the_console_shows_the_analysis_changes_in_ms(small_gpu_trace):
    from perfcmp.render import top_changes

    blocks, _ = top_changes.select(_pair(small_gpu_trace, 40.0), 10)
    assert blocks[0].title == "Top regressions: operators (ms, whole-profile totals)"
    assert blocks[0].rows == [("aten::mm", 0.02, 0.08, 0.06)]
