"""The pipeline end to end on the shipped demo pairs: serial and parallel agree, errors cross
the process boundary intact, and the demo pairs show their documented differences."""

from pathlib import Path

import pytest

from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from perfcmp.base.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "golden" / "demo"
GPU_BASE, GPU_COMP = str(DEMO / "gpu" / "base.pt.trace.json.gz"), str(DEMO / "gpu" / "comp.pt.trace.json.gz")
NPU_BASE, NPU_COMP = str(DEMO / "npu" / "base_ascend_pt"), str(DEMO / "npu" / "comp_ascend_pt")


def test_serial_and_parallel_give_the_same_result():
    serial = run(CompareOptions(GPU_BASE, NPU_COMP, jobs=1))
    parallel = run(CompareOptions(GPU_BASE, NPU_COMP, jobs=2))
    assert serial.to_json() == parallel.to_json()


def test_no_room_for_the_handoff_file_sends_the_side_through_the_pipe(monkeypatch):
    """The worker pickles its side into a temporary file; a full temporary directory is no
    error: the side comes through the worker's pipe instead (the fork inherits this patch)."""
    import errno

    from perfcmp.base import procs

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    serial = run(CompareOptions(GPU_BASE, NPU_COMP, jobs=1))
    monkeypatch.setattr(procs, "_into_file", full)
    assert run(CompareOptions(GPU_BASE, NPU_COMP, jobs=2)).to_json() == serial.to_json()


def test_one_process_parks_the_first_side_on_disk_and_gets_the_same_result(monkeypatch):
    """Read one after the other, large inputs' first side waits in a temporary file while the
    second is read; with no room there it stays in memory. The result is the same each way."""
    import errno

    from perfcmp import pipeline

    kept = run(CompareOptions(GPU_BASE, NPU_COMP, jobs=1)).to_json()  # the demo pair is below LARGE_INPUT_BYTES
    parked = []
    park = pipeline._park
    monkeypatch.setattr(pipeline.budget, "LARGE_INPUT_BYTES", 0)
    monkeypatch.setattr(pipeline, "_park", lambda side: parked.append(park(side)) or parked[-1])
    assert run(CompareOptions(GPU_BASE, NPU_COMP, jobs=1)).to_json() == kept
    assert len(parked) == 1 and parked[0].closed  # parked, read back, and the file closed

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    parked.clear()
    monkeypatch.setattr(pipeline.pickle, "dump", full)
    assert run(CompareOptions(GPU_BASE, NPU_COMP, jobs=1)).to_json() == kept
    assert parked == [None]


def test_an_error_in_the_worker_keeps_its_path(tmp_path):
    missing = str(tmp_path / "nope.json")
    with pytest.raises(InputError) as info:
        run(CompareOptions(GPU_BASE, missing, jobs=2))
    assert info.value.path == missing and "no such file" in info.value.message


def test_gpu_demo_pair_shows_slower_matmul():
    result = run(CompareOptions(GPU_BASE, GPU_COMP))
    rows = {r.key: r for r in result.overall}
    # the comparison run's GEMMs are 20 % slower: Matmul grows by about that much
    matmul = rows["computing.matmul"]
    assert 1.15 < matmul.ratio < 1.25
    # and it is the largest computing increase among the level-1 categories
    level1 = [r for r in result.overall if r.level == 1 and r.key.startswith("computing.")]
    assert max(level1, key=lambda r: r.diff_us).key == "computing.matmul"


def test_npu_demo_pair_shows_doubled_communication_wait():
    result = run(CompareOptions(NPU_BASE, NPU_COMP))
    waits = {r.key: r for r in result.overall if r.key.endswith(".wait")}
    assert len(waits) == 1
    (wait,) = waits.values()
    assert 1.8 < wait.ratio < 2.2
    assert result.comparison.uncovered_us > result.base.uncovered_us


def test_what_exists_once_modules_load_is_frozen_out_of_the_collector(tmp_path, monkeypatch):
    """``imports_frozen``: the collector paused while the block loads modules, then everything
    alive frozen (so a cycle made before it is never collected); a block that loads nothing
    (a command run again in one process) freezes nothing more."""
    import gc
    import sys
    import weakref

    from perfcmp.base.heap import imports_frozen

    class Node:
        pass

    (tmp_path / "perfcmp_test_fresh_module.py").write_text("VALUE = [1, 2, 3]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "perfcmp_test_fresh_module", raising=False)
    was_frozen = gc.get_freeze_count()
    try:
        node = Node()
        node.self = node
        kept = weakref.ref(node)
        del node
        with imports_frozen():
            assert not gc.isenabled()
            import perfcmp_test_fresh_module  # noqa: F401
        assert gc.isenabled() and gc.get_freeze_count() > was_frozen
        gc.collect()
        assert kept() is not None  # frozen: out of every collection's reach
        frozen = gc.get_freeze_count()
        late = Node()
        late.self = late
        gone = weakref.ref(late)
        del late
        with imports_frozen():
            import perfcmp_test_fresh_module  # noqa: F401,F811  (loaded already: nothing new)
        gc.collect()
        assert gc.get_freeze_count() == frozen and gone() is None
    finally:
        if not was_frozen:
            gc.unfreeze()


def test_the_collector_is_paused_for_a_phase_and_collects_its_cycles_at_its_end():
    """Inside ``collector_paused`` no collection runs (the phases make no cycles worth one); at its
    end one collection frees the cycles made inside; an inner block, or a caller that paused the
    collector itself, leaves it paused."""
    import gc
    import weakref

    from perfcmp.base.heap import collector_paused

    class Node:
        pass

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            pass
        assert not gc.isenabled()  # the inner block left it to the outer one
        node = Node()
        node.self = node  # a cycle: only the collector frees it
        gone = weakref.ref(node)
        del node
        assert gone() is not None  # no collection inside
    assert gc.isenabled() and gone() is None
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
