"""The diagnosis (perfcmp.diagnosis): findings that reconcile with the E2E difference.

Figures worked out from the demo pair's generator (golden/make_demo.sh: the comparison's
aten::mm kernels 20 % slower, one dropout (+ backward) per layer) and read from the profiler's
own files of the shared level-0 exports.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfcmp.options import CompareOptions
from perfcmp.pipeline import run

DEMO = Path(__file__).resolve().parents[1] / "golden" / "demo" / "gpu"


def _timed(result):
    return [f for f in result.diagnosis.findings if f.cost_us is not None]


def test_gpu_demo_pair_two_findings_that_add_up(tmp_path):
    result = run(CompareOptions(str(DEMO / "base.pt.trace.json.gz"), str(DEMO / "comp.pt.trace.json.gz"),
                                output=str(tmp_path), formats=("json",)))
    d = result.diagnosis
    timed = _timed(result)
    assert [f.mechanism for f in timed] == ["slower_kernels", "added_ops"]
    # E2E (ProfilerStep#1 ts to ProfilerStep#8 ts + dur) 34308.880 -> 37270.425 µs over 8 steps
    # each: +370.19 µs per step
    assert d.e2e_diff_us == pytest.approx((37270.425 - 34308.880) / 8, abs=1e-6)
    assert sum(f.cost_us for f in timed) + d.unexplained_us == pytest.approx(d.e2e_diff_us, abs=1e-9)
    # the injected cost: Matmul 13040.289 -> 15617.460 µs = +322.1 µs per step; within 10 %
    assert timed[0].cost_us == pytest.approx((15617.460 - 13040.289) / 8, rel=0.10)
    # the added op: the two dropout kernels, comparison only, 201.321 + 193.866 µs over 8 steps
    assert timed[1].cost_us == pytest.approx((201.321 + 193.866) / 8, abs=1e-3)
    assert "aten::dropout" in timed[1].statement
    assert abs(d.unexplained_us) < 0.05 * d.e2e_diff_us
    assert timed[0].cost_low_us < timed[0].cost_us < timed[0].cost_high_us
    frame = result.diagnosis_frame()
    assert frame["cost_us"].sum() == pytest.approx(d.e2e_diff_us)  # the unexplained row closes it
    assert frame["mechanism"].iloc[-1] == "unexplained"


def test_aa_pair_has_no_finding(tmp_path):
    trace = str(DEMO / "base.pt.trace.json.gz")
    d = run(CompareOptions(trace, trace, output=str(tmp_path), formats=("json",))).diagnosis
    assert d.findings == [] and d.e2e_diff_us == 0 and d.unexplained_us == 0


def test_level0_rank1_vs_rank0_communication_says_who_waits(samples_dir, tmp_path):
    text = samples_dir / "npu" / "real_msinsight_level0" / "text"
    result = run(CompareOptions(str(text / "rank0_ascend_pt"), str(text / "rank1_ascend_pt"),
                                output=str(tmp_path), formats=("json",)))
    d = result.diagnosis
    first = _timed(result)[0]
    assert first.mechanism == "communication" and first.title.endswith("waiting")
    # Uncovered Communication 81515.6 -> 64616.1 µs, its Wait part 77547.9 -> 60503.5 µs (one step)
    assert first.cost_us == pytest.approx(64616.1 - 81515.6, abs=1.0)
    wait = next(e for e in first.evidence if e.name == "of it waiting")
    assert (wait.base, wait.comp) == (pytest.approx(77547.9, abs=1.0), pytest.approx(60503.5, abs=1.0))
    assert first.statement.startswith("the base side waits more")
    assert sum(f.cost_us for f in _timed(result)) + d.unexplained_us == pytest.approx(d.e2e_diff_us)


def test_a_findings_interval_sums_its_rows_in_their_given_order_whatever_the_hash_seed():
    """``_Context.interval`` adds the rows' (ci − diff) in the order the rows are listed (duplicates
    once): summed in a set's order, which follows PYTHONHASHSEED, the last digits of a finding's
    cost interval changed from run to run. Here the order decides the float sum exactly:
    (1e16 + 1) − 1e16 = 0 but (1e16 − 1e16) + 1 = 1."""
    from types import SimpleNamespace

    from perfcmp.diagnosis.detect import _Context

    ctx = _Context.__new__(_Context)
    ctx.judged = {key: SimpleNamespace(ci_low=low, ci_high=0.0, diff=0.0)
                  for key, low in (("kernel:a", 1e16), ("kernel:b", 1.0), ("kernel:c", -1e16))}
    assert ctx.interval(["kernel:a", "kernel:b", "kernel:c", "kernel:b"]) == (0.0, 0.0)
    assert ctx.interval(["kernel:a", "kernel:c", "kernel:b"]) == (1.0, 0.0)


def _side_facts_by_texts(details) -> dict:
    """The definition ``detect.side_facts`` computes by codes: pandas group-bys over the texts."""
    from collections import defaultdict

    import pandas as pd

    compute, ops = details.compute, details.ops
    out, owners = defaultdict(dict), defaultdict(set)
    for column in [c for c in ("kernel", "name") if c in compute]:
        grouped = compute.groupby([compute[column].astype(str), compute["core"].astype(str)], sort=True)["dur_us"].sum()
        for (name, core), total in grouped.items():
            out[name][core] = float(total)
    owner = compute["owner"].to_numpy().astype("int64")
    linked = (owner >= 0) & (owner < len(ops))
    pairs = pd.DataFrame({"op": ops["name"].astype(str).str.lower().to_numpy()[owner[linked]]})
    for column in [c for c in ("kernel", "name") if c in compute]:
        pairs["kernel"] = compute[column].astype(str).to_numpy()[linked]
        for kernel, op in pairs[["kernel", "op"]].drop_duplicates().itertuples(index=False, name=None):
            owners[kernel].add(op)
    return {"cores": dict(out), "owners": {k: sorted(v) for k, v in owners.items()}}


def test_side_facts_by_codes_are_the_group_bys_over_texts():
    """Per kernel name and core the µs summed in the same rows' order (so to the last bit), in
    the texts' sorted order, and each kernel's launching ops. The readers' text columns hold
    strings ("" for a missing one), equal ones often as one shared object and sometimes not."""
    import random
    from types import SimpleNamespace

    import numpy as np
    import pandas as pd

    from perfcmp.diagnosis.detect import side_facts

    rng = random.Random(7)
    pool = ["gemm", "Gelu", "gelu", "b", "".join(["ge", "mm"]), "1", "ä-kernel", ""]  # one "gemm" a fresh object
    for _ in range(60):
        n, m = rng.randint(1, 300), rng.randint(1, 40)
        compute = pd.DataFrame({
            "name": np.array([rng.choice(pool) for _ in range(n)], dtype=object),
            "kernel": np.array([rng.choice(pool[:5]) for _ in range(n)], dtype=object),
            "core": np.array([rng.choice(["AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", ""]) for _ in range(n)], dtype=object),
            "dur_us": [rng.choice([0.1, 0.2, 1e-3, 123.456, float("nan"), 7.0]) for _ in range(n)],
            "owner": [rng.randint(-1, m + 1) for _ in range(n)],
        })
        ops = pd.DataFrame({"name": np.array([rng.choice(["aten::MM", "aten::mm", "Add", ""]) for _ in range(m)],
                                             dtype=object)})
        details = SimpleNamespace(compute=compute, ops=ops)
        facts, expected = side_facts(details), _side_facts_by_texts(details)
        assert list(facts["cores"]) == list(expected["cores"])  # the same keys in the same order
        assert {k: list(v.items()) for k, v in facts["cores"].items()} == \
            {k: list(v.items()) for k, v in expected["cores"].items()}
        assert facts["owners"] == expected["owners"]
