"""Regression verdicts from steps as samples (perfcmp.verdict).

Sample sets are written literally or drawn with seeded numpy noise, so every expected label
follows from the rules in the module docstring; the last tests run the project's trace
generator end to end (A/A, then a GEMM slowdown).
"""

from __future__ import annotations

import inspect
from pathlib import Path

import msgspec
import numpy as np
import pytest

import simulator
from perfcmp.base.errors import InputError
from perfcmp.render.reasons import sentence, sentences
from perfcmp.results.pair import DEVICES_DIFFER, FEW_MATCHED, NO_STEPS, STEP_COUNTS
from perfcmp.results.samples import SampleSet
from perfcmp.verdict import Thresholds, choose_skip, judge, outlier_steps

ROOT = Path(__file__).resolve().parents[1]
LABELS = {"regressed", "improved", "unchanged", "within noise", "inconclusive", "base only", "comparison only",
          "not comparable"}


def sset(rows: dict[str, list[float | None]], steps: list[int] | None = None, device: str = "GPU",
         source: str = "mem") -> SampleSet:
    n = len(next(iter(rows.values()))) if rows else 0
    return SampleSet(device=device, source=source, steps=list(range(1, n + 1)) if steps is None else steps,
                     rows={k: [None if v is None else float(v) for v in vals] for k, vals in sorted(rows.items())})


def by_row(verdict) -> dict:
    return {r.row: r for r in verdict.rows}


def labelled(verdict, label: str) -> list[str]:
    return [r.row for r in verdict.rows if r.verdict == label]


# --- a synthetic training run: 200 op keys, E2E, communication and memory -------------------

N_KEYS = 200
_SIZES = np.random.default_rng(1234).lognormal(np.log(200.0), 1.0, N_KEYS)  # µs per step, key by key
_SIZES[0] = 4000.0  # a big op: +20 % of it clears 0.5 % of the ~90 ms step
_SIGMAS = np.random.default_rng(4321).uniform(0.02, 0.05, N_KEYS)  # 2–5 % lognormal noise per key


def run(seed: int, steps: int = 10, scale: dict[str, float] | None = None) -> SampleSet:
    """One side: every key = its size × lognormal noise, per step; E2E = Σ ops + 10 % idle;
    ``scale`` multiplies rows (after E2E is summed, so scaling an op leaves E2E alone unless
    E2E itself is scaled)."""
    rng = np.random.default_rng(seed)
    ops = _SIZES[:, None] * rng.lognormal(0.0, _SIGMAS[:, None], (N_KEYS, steps))
    rows = {f"op:k{i:03d}": ops[i] for i in range(N_KEYS)}
    rows["overall:e2e"] = ops.sum(axis=0) * 1.1 * rng.lognormal(0.0, 0.01, steps)
    rows["overall:comm"] = 3500.0 * rng.lognormal(0.0, 0.03, steps)
    rows["comm:allreduce"] = 3000.0 * rng.lognormal(0.0, 0.03, steps)
    rows["memory:peak_allocated"] = np.full(steps, 2.0e9)  # allocator peaks repeat exactly step to step
    for row, factor in (scale or {}).items():
        rows[row] = rows[row] * factor
    return sset({k: list(v) for k, v in rows.items()})


# --- A/A and injected regressions -----------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_aa_pairs_from_one_distribution_never_regress(seed):
    verdict = judge(run(2 * seed + 100), run(2 * seed + 101))
    assert labelled(verdict, "regressed") == []
    assert labelled(verdict, "improved") == []
    assert verdict.overall == "neutral"
    assert verdict.comparable and verdict.n_steps == (10, 10)
    assert {r.verdict for r in verdict.rows} <= LABELS


def test_one_op_twenty_percent_slower_is_the_only_regression():
    verdict = judge(run(1), run(2, scale={"op:k000": 1.2}))
    assert labelled(verdict, "regressed") == ["op:k000"]
    row = by_row(verdict)["op:k000"]
    assert row.relative == pytest.approx(0.2, abs=0.05)
    assert row.p_adjusted < 0.05 and row.ci_low > 0
    assert verdict.overall == "neutral"  # E2E moved < 1 %
    assert any("op:k000" in reason for reason in sentences(verdict))  # listed as a note


def test_doubled_communication_regresses():
    verdict = judge(run(3), run(4, scale={"overall:comm": 2.0, "comm:allreduce": 2.0}))
    assert set(labelled(verdict, "regressed")) == {"overall:comm", "comm:allreduce"}


def test_peak_memory_fifteen_percent_higher_regresses():
    verdict = judge(run(5), run(6, scale={"memory:peak_allocated": 1.15}))
    row = by_row(verdict)["memory:peak_allocated"]
    assert (row.verdict, row.unit, row.dimension, row.key) == ("regressed", "bytes", "memory", "peak_allocated")
    assert row.diff == pytest.approx(0.3e9)
    assert labelled(verdict, "regressed") == ["memory:peak_allocated"]


def test_e2e_ten_percent_slower_is_an_overall_regression():
    verdict = judge(run(7), run(8, scale={"overall:e2e": 1.1}))
    e2e = by_row(verdict)["overall:e2e"]
    assert e2e.verdict == "regressed"
    assert e2e.p_adjusted == e2e.p_value < 0.05  # the primary endpoint is tested alone
    assert e2e.ci_low <= e2e.diff <= e2e.ci_high
    assert verdict.overall == "regression"


def test_faster_e2e_is_an_improvement():
    verdict = judge(run(9), run(10, scale={"overall:e2e": 0.85}))
    assert by_row(verdict)["overall:e2e"].verdict == "improved"
    assert verdict.overall == "improvement"


# --- n = 1 -----------------------------------------------------------------------------------


def test_single_steps_apply_the_floors_only():
    base = sset({"overall:e2e": [10000], "op:big": [1000], "op:small": [1000], "memory:peak_allocated": [1e9]})
    comp = sset({"overall:e2e": [10200], "op:big": [1100], "op:small": [1030], "memory:peak_allocated": [1e9]})
    verdict = judge(base, comp)
    rows = by_row(verdict)
    assert all(r.n1 and r.p_value is None and r.p_adjusted is None and r.ci_low is None for r in verdict.rows)
    assert rows["op:big"].verdict == "regressed"  # +10 %, +100 µs, above 0.5 % of a 10 ms step
    assert rows["op:small"].verdict == "unchanged"  # +3 %: below the relative floor
    assert rows["overall:e2e"].verdict == "unchanged"  # +2 %
    assert rows["memory:peak_allocated"].verdict == "unchanged"
    assert verdict.overall == "neutral"
    assert "n=1: floors only, no significance test" in sentences(verdict)
    assert verdict.n_steps == (1, 1)


def test_one_step_against_many_is_still_n1():
    base = sset({"overall:e2e": [10000, 10100, 9900, 10050], "op:a": [1000, 1010, 990, 1005]})
    comp = sset({"overall:e2e": [12000], "op:a": [1500]})
    verdict = judge(base, comp)
    rows = by_row(verdict)
    assert rows["overall:e2e"].n1 and rows["overall:e2e"].verdict == "regressed"
    assert rows["op:a"].n1 and rows["op:a"].p_value is None and rows["op:a"].verdict == "regressed"
    assert verdict.overall == "regression"
    assert any("n=1" in reason for reason in sentences(verdict))


# --- floors ----------------------------------------------------------------------------------


def _noisy(rng, mean: float, sigma: float, n: int = 10) -> list[float]:
    return list(mean * rng.lognormal(0.0, sigma, n))


def test_a_significant_two_percent_change_is_unchanged():
    rng = np.random.default_rng(11)
    base = sset({"overall:e2e": _noisy(rng, 50000, 0.002), "op:gemm": _noisy(rng, 5000, 0.002)})
    comp = sset({"overall:e2e": _noisy(rng, 50000, 0.002), "op:gemm": _noisy(rng, 5100, 0.002)})
    row = by_row(judge(base, comp))["op:gemm"]
    # below the 5 % floor: not even tested (it could not count), so no p-value
    assert row.p_value is None and row.relative == pytest.approx(0.02, abs=0.005)
    assert row.verdict == "unchanged"


def test_thirty_percent_of_a_three_microsecond_op_is_unchanged():
    rng = np.random.default_rng(12)
    base = sset({"overall:e2e": _noisy(rng, 1000, 0.002), "op:tiny": _noisy(rng, 3.0, 0.01)})
    comp = sset({"overall:e2e": _noisy(rng, 1000, 0.002), "op:tiny": _noisy(rng, 3.9, 0.01)})
    row = by_row(judge(base, comp))["op:tiny"]
    # below the 20 µs floor: not tested
    assert row.p_value is None and row.relative == pytest.approx(0.3, abs=0.03)
    assert row.verdict == "unchanged"  # 0.9 µs < the 20 µs absolute floor
    lowered = by_row(judge(base, comp, Thresholds(absolute_us=0.5, share_of_step=0.0)))["op:tiny"]
    assert lowered.verdict == "regressed"


def test_the_share_of_step_floor():
    rng = np.random.default_rng(13)
    # +30 µs (+10 %) clears 5 % and 20 µs, but not 0.5 % of a 10 ms step (50 µs)
    base = sset({"overall:e2e": _noisy(rng, 10000, 0.002), "op:mid": _noisy(rng, 300, 0.002)})
    comp = sset({"overall:e2e": _noisy(rng, 10000, 0.002), "op:mid": _noisy(rng, 330, 0.002)})
    assert by_row(judge(base, comp))["op:mid"].verdict == "unchanged"
    assert by_row(judge(base, comp, Thresholds(share_of_step=0.001)))["op:mid"].verdict == "regressed"


def test_a_noisy_ten_percent_change_with_three_steps_is_within_noise():
    base = sset({"overall:e2e": [10000, 11000, 9000], "op:a": [1000, 1200, 800]})
    comp = sset({"overall:e2e": [11000, 12100, 9900], "op:a": [1100, 1320, 880]})
    verdict = judge(base, comp)
    rows = by_row(verdict)
    assert rows["op:a"].verdict == "within noise"
    assert rows["op:a"].p_value >= 0.1  # 3 vs 3: the exact test cannot go lower
    assert rows["overall:e2e"].verdict == "within noise"
    assert verdict.overall == "inconclusive"
    assert any("not significantly" in reason for reason in sentences(verdict))


# --- row kinds and comparability -------------------------------------------------------------


def test_rows_on_one_side_only_and_zero_rows():
    base = sset({"overall:e2e": [1000, 1010, 990], "op:gone": [50, 52, 48], "op:both": [500, 505, 495],
                 "overall:computing.cube": [0, 0, 0]})
    comp = sset({"overall:e2e": [1000, 1005, 995], "op:new": [60, None, 62], "op:both": [500, 502, 498],
                 "overall:computing.cube": [0, 0, 0]})
    rows = by_row(judge(base, comp))
    gone, new = rows["op:gone"], rows["op:new"]
    assert (gone.verdict, gone.base_median, gone.comp_median, gone.diff, gone.n_comp) == (
        "base only", 50.0, None, None, 0)
    assert (new.verdict, new.base_median, new.comp_median, new.n_base, new.n_comp) == (
        "comparison only", None, 60.0, 0, 3)
    assert rows["op:both"].verdict == "unchanged"
    assert rows["overall:computing.cube"].verdict == "not comparable"  # 0 on both sides
    assert [r.row for r in judge(base, comp).rows] == sorted(rows)


def test_none_counts_as_zero_time_but_missing_memory():
    base = sset({"overall:e2e": [1000] * 4, "op:sometimes": [100, None, 100, None],
                 "memory:peak_allocated": [5e8, None, 5e8, 5e8]})
    comp = sset({"overall:e2e": [1000] * 4, "op:sometimes": [100, 100, 100, 100],
                 "memory:peak_allocated": [5e8, 5e8, None, 5e8]})
    rows = by_row(judge(base, comp))
    assert rows["op:sometimes"].base_median == 50.0 and rows["op:sometimes"].n_base == 4
    memory = rows["memory:peak_allocated"]
    assert (memory.n_base, memory.n_comp, memory.base_median, memory.p_value) == (3, 3, 5e8, None)
    assert memory.verdict == "unchanged"


def test_gpu_against_npu_judges_overall_rows_only():
    base = run(21)
    comp = run(22, scale={"overall:e2e": 1.1})
    comp = msgspec.structs.replace(comp, device="NPU")
    verdict = judge(base, comp)
    rows = by_row(verdict)
    assert not verdict.comparable
    (reason,) = [r for r in verdict.reasons if r.kind == DEVICES_DIFFER]  # a record: the devices, no words
    assert reason.names == {"base_device": "GPU", "comp_device": "NPU"}
    assert sentence(reason, rows) == ("not comparable: devices differ (GPU vs NPU); op, kernel and communication "
                                      "rows are not judged")
    assert {rows[r].verdict for r in rows if r.startswith(("op:", "comm:"))} == {"not comparable"}
    assert rows["overall:e2e"].verdict == "regressed" and verdict.overall == "regression"
    assert rows["memory:peak_allocated"].verdict == "unchanged"


def test_little_matched_op_time_is_not_comparable():
    base = sset({"overall:e2e": [1000, 1010, 990], "op:a": [100, 100, 100], "kernel:k": [80, 80, 80]})
    comp = sset({"overall:e2e": [1000, 1010, 990], "op:a": [100, 100, 100], "op:b": [300, 300, 300],
                 "kernel:k": [80, 80, 80]})
    verdict = judge(base, comp)
    assert not verdict.comparable and verdict.overall == "inconclusive"
    # matched op time: op:a's 100 of the comparison's 400 µs a step, 25 % (< 50 %)
    (reason,) = [r for r in verdict.reasons if r.kind == FEW_MATCHED]
    assert reason.numbers == {"matched_share": 0.25, "matched_share_min": 0.5}
    assert sentence(reason, {}) == ("not comparable: only 25.0 % of the comparison's op time is in op keys present "
                                    "on both sides (< 50 %)")
    assert {r.verdict for r in verdict.rows if r.dimension in ("op", "kernel")} == {"not comparable"}
    assert by_row(verdict)["overall:e2e"].verdict == "unchanged"


def test_a_side_without_steps_is_inconclusive():
    verdict = judge(run(23), SampleSet(device="GPU", source="empty", steps=[], rows={}))
    assert (verdict.overall, verdict.comparable, verdict.n_steps) == ("inconclusive", False, (10, 0))
    assert {r.verdict for r in verdict.rows} == {"not comparable"}
    assert [(r.kind, r.names) for r in verdict.reasons] == [(NO_STEPS, {"side": "comparison"})]
    assert sentences(verdict) == ["not comparable: the comparison has no steps"]


def test_step_counts_far_apart_are_a_note():
    base = sset({"overall:e2e": [1000, 1010, 990]})
    comp = sset({"overall:e2e": [1000, 1010, 990, 1005, 995, 1000, 1002]})
    verdict = judge(base, comp, skip=0)
    assert verdict.comparable and verdict.overall == "neutral"
    assert [(r.kind, r.numbers) for r in verdict.reasons] == [
        (STEP_COUNTS, {"step_ratio": 2.0, "base_steps": 3, "comp_steps": 7})]
    assert sentences(verdict) == ["note: step counts differ by more than 2× (3 vs 7 after the skip)"]


def test_ragged_rows_are_an_input_error():
    bad = SampleSet(device="GPU", source="bad.json", steps=[1, 2], rows={"overall:e2e": [1.0]})
    with pytest.raises(InputError):
        judge(bad, bad)


# --- warm-up, outliers, corrections, determinism ---------------------------------------------


def test_a_slow_first_step_is_warm_up():
    e2e = [3000, 1000, 1010, 990, 1005, 995]
    base = sset({"overall:e2e": e2e, "op:a": [900, 300, 300, 300, 300, 300]}, steps=[5, 6, 7, 8, 9, 10])
    skip, reason = choose_skip(base, None)
    assert skip == 1 and "step 5" in reason and "20 %" in reason
    comp = sset({"overall:e2e": [1000, 1010, 990, 1005, 995, 1000], "op:a": [300] * 6})
    verdict = judge(base, comp)
    # decided once for the pair: the base's warm-up count is dropped from both sides
    assert verdict.skip_steps == (1, 1) and verdict.n_steps == (5, 5)
    assert "base 1 dropped (step 5)" in verdict.skip_reason and "1 dropped from each side" in verdict.skip_reason
    assert by_row(verdict)["op:a"].base_median == 300.0
    assert verdict.overall == "neutral"


def test_warm_up_is_at_most_a_third_and_needs_three_steps():
    assert choose_skip(sset({"overall:e2e": [8000, 4000, 2000, 1000, 1000, 1000]}), None)[0] == 2
    assert choose_skip(sset({"overall:e2e": [3000, 1000]}), None)[0] == 0
    assert choose_skip(sset({"overall:e2e": [1000, 1000, 1000]}), None)[0] == 0


def test_requested_skip_keeps_at_least_one_step():
    three = sset({"overall:e2e": [3000, 1000, 1000]})
    assert choose_skip(three, 1) == (1, "--skip-steps 1")
    skip, reason = choose_skip(three, 5)
    assert skip == 2 and "kept the last one" in reason
    verdict = judge(three, three, skip=5)
    assert verdict.skip_steps == (2, 2) and verdict.n_steps == (1, 1)
    assert "kept the last one" in verdict.skip_reason
    verdict = judge(three, three, skip=0)
    assert verdict.skip_steps == (0, 0) and verdict.skip_reason == "--skip-steps 0"


def test_outlier_steps_are_reported_not_dropped():
    e2e = [1000, 1010, 990, 3000, 1005, 995, 1000]
    base = sset({"overall:e2e": e2e}, steps=[11, 12, 13, 14, 15, 16, 17])
    assert outlier_steps(base, 0) == [14]
    assert outlier_steps(base, 4) == []  # only 3 steps after the skip, none unusual
    verdict = judge(base, base)
    assert verdict.outlier_steps == {"base": [14], "comparison": [14]}
    assert verdict.n_steps == (7, 7)
    flat = sset({"overall:e2e": [1000, 1000, 1000, 1000, 1400]})  # MAD 0: the mean deviation stands in
    assert outlier_steps(flat, 0) == [5]


def test_bh_is_no_stricter_than_holm():
    base, comp = run(31), run(32, scale={"op:k000": 1.2, "op:k001": 1.5})
    holm, bh = judge(base, comp), judge(base, comp, Thresholds(correction="bh"))
    for h, b in zip(holm.rows, bh.rows):
        assert h.row == b.row and h.p_value == b.p_value
        if h.p_adjusted is not None:
            assert b.p_adjusted <= h.p_adjusted + 1e-12
    assert bh.thresholds["correction"] == "bh"
    with pytest.raises(ValueError):
        Thresholds(correction="bonferroni")


def test_judging_is_deterministic_and_plain():
    base, comp = run(41), run(42, scale={"op:k000": 1.2, "overall:e2e": 1.07})
    first, second = judge(base, comp), judge(base, comp)
    assert first == second
    assert msgspec.json.encode(first) == msgspec.json.encode(second)
    assert first.thresholds == Thresholds().as_dict()
    for row in first.rows:
        for field in msgspec.structs.fields(row):
            value = getattr(row, field.name)
            assert value is None or type(value) in (str, int, float, bool), (row.row, field.name, type(value))
    assert all(type(v) is float for v in first.thresholds.values() if not isinstance(v, str))
    # a row's interval does not depend on which other rows exist
    alone = judge(sset({"op:k000": base.rows["op:k000"]}), sset({"op:k000": comp.rows["op:k000"]}))
    assert (alone.rows[0].ci_low, alone.rows[0].ci_high) == (by_row(first)["op:k000"].ci_low,
                                                             by_row(first)["op:k000"].ci_high)
    assert msgspec.json.decode(msgspec.json.encode(first), type=type(first)) == first


def test_thousands_of_rows_are_all_judged():
    rng = np.random.default_rng(51)
    sizes = rng.lognormal(4.0, 1.5, 3000)
    base = sset({f"op:k{i}": list(sizes[i] * rng.lognormal(0, 0.03, 30)) for i in range(3000)})
    comp = sset({f"op:k{i}": list(sizes[i] * rng.lognormal(0, 0.03, 30)) for i in range(3000)})
    verdict = judge(base, comp)  # speed: benchmarks, not tests
    assert len(verdict.rows) == 3000


# --- end to end with the trace generator -----------------------------------------------------


def _profile_samples(path: Path) -> SampleSet:
    from perfcmp.breakdown import Analyzer
    from perfcmp.categories import load_rules
    from perfcmp.details.extract import extract
    from perfcmp.names import load_normalizer
    from perfcmp.readers import load_profile
    from perfcmp.samples import sample_profile

    profile = load_profile(str(path))
    analyzer = Analyzer(profile, load_rules())
    details = extract(profile, load_normalizer())
    if list(inspect.signature(sample_profile).parameters)[1] == "analyzer":
        return sample_profile(profile, analyzer, details)
    per_step = {step: analyzer.breakdown(window) for step, window in analyzer.step_windows().items()}
    return sample_profile(profile, per_step, details)


def test_generated_profiles_aa_then_slower_gemm(tmp_path):
    paths = {}
    for name, seed, scale in (("base", 1, ()), ("aa", 2, ()), ("mm", 2, ("aten::mm=1.2",))):
        paths[name] = tmp_path / f"{name}.pt.trace.json"
        simulator.write_gpu_trace(str(paths[name]), steps=8, layers=1, seed=seed, scale=scale)
    base, aa, mm = (_profile_samples(paths[n]) for n in ("base", "aa", "mm"))
    assert len(base.steps) == 8 and any(r.startswith("op:") for r in base.rows)

    same = judge(base, aa)
    assert same.comparable and same.n_steps == (8, 8)
    assert labelled(same, "regressed") == []
    assert same.overall == "neutral"

    slower = judge(base, mm)
    regressed = set(labelled(slower, "regressed"))
    assert {"op:aten::linear", "kernel:matmul", "overall:computing.matmul"} <= regressed
    assert slower.overall == "regression"
    for row in regressed:  # only GEMM-driven rows (and their totals) moved
        assert any(word in row for word in ("matmul", "gemm", "linear", "Mm", "computing", "e2e")), row


# --- few steps: Welch on log steps, occurrences, inconclusive, families ------------------------


def test_three_steps_a_side_reach_significance_with_welch_on_log_times():
    # E2E 100, 101, 99 ms against 114, 115, 113 ms: the logs' means differ by ln(1.14) = 0.131,
    # their standard deviations are 0.0100 and 0.0088, so se = sqrt(0.0100²/3 + 0.0088²/3) = 0.0077
    # and t = 17.06 on ~3.9 degrees of freedom, p ≈ 1e-4 (the rank test's smallest p would be 0.1)
    base = sset({"overall:e2e": [100e3, 101e3, 99e3]})
    comp = sset({"overall:e2e": [114e3, 115e3, 113e3]})
    e2e = by_row(judge(base, comp))["overall:e2e"]
    assert (e2e.basis, e2e.test, e2e.n_base_samples, e2e.n_comp_samples) == ("steps", "welch-log", 3, 3)
    assert e2e.verdict == "regressed" and e2e.p_value < 1e-3
    logs_b, logs_c = np.log([100e3, 101e3, 99e3]), np.log([114e3, 115e3, 113e3])
    se = np.sqrt(logs_b.var(ddof=1) / 3 + logs_c.var(ddof=1) / 3)
    assert (logs_c.mean() - logs_b.mean()) / se == pytest.approx(17.06, abs=0.01)
    assert judge(base, comp).overall == "regression"


def test_every_step_moved_but_too_few_to_tell_is_inconclusive_not_within_noise():
    # 2 steps a side, all comparison steps slower, but the spread is as large as the change
    base = sset({"overall:e2e": [100e3, 120e3]})
    comp = sset({"overall:e2e": [121e3, 150e3]})
    verdict = judge(base, comp)
    e2e = by_row(verdict)["overall:e2e"]
    assert e2e.verdict == "inconclusive" and e2e.p_value > 0.05
    assert "≥ 4 steps a side" in e2e.note
    assert verdict.overall == "inconclusive" and any("E2E changed by" in r for r in sentences(verdict))
    # overlapping samples: within noise
    comp = sset({"overall:e2e": [110e3, 150e3]})
    assert by_row(judge(base, comp))["overall:e2e"].verdict == "within noise"


def with_instances(rows: dict, instances: dict) -> SampleSet:
    return msgspec.structs.replace(sset(rows), instances=instances)


def test_one_step_ops_are_judged_on_their_paired_occurrences():
    # one step, 8 layers: every layer's MatMul 15–25 % slower -> 8 pairs whose log ratios are all
    # positive and distinct: the exact signed-rank p is 2 / 2**8 = 0.0078
    layers_b = [100.0, 110.0, 90.0, 105.0, 95.0, 100.0, 102.0, 98.0]
    layers_c = [v * f for v, f in zip(layers_b, (1.15, 1.16, 1.18, 1.19, 1.21, 1.22, 1.24, 1.25))]
    base = with_instances({"op:aten::mm": [sum(layers_b)], "overall:e2e": [10_000.0]}, {"op:aten::mm": [layers_b]})
    comp = with_instances({"op:aten::mm": [sum(layers_c)], "overall:e2e": [10_160.0]}, {"op:aten::mm": [layers_c]})
    mm = by_row(judge(base, comp))["op:aten::mm"]
    assert (mm.basis, mm.test, mm.n_base_samples) == ("instances (paired)", "wilcoxon-signed-rank", 8)
    assert mm.p_value == pytest.approx(2 / 2 ** 8) and mm.verdict == "regressed" and not mm.n1
    # unequal occurrence counts: the rank test on them instead (8 against 9, all larger: exact p)
    comp = with_instances({"op:aten::mm": [sum(layers_c) + 120.0], "overall:e2e": [10_300.0]},
                          {"op:aten::mm": [layers_c + [120.0]]})
    mm = by_row(judge(base, comp))["op:aten::mm"]
    assert (mm.basis, mm.test, mm.n_comp_samples) == ("instances", "mann-whitney", 9)
    assert mm.verdict == "regressed"


def test_gated_rows_are_their_own_family():
    # 40 noisy exploratory rows (medians +18 %, samples overlapping) and one gated row that moved
    # clearly (Welch-log p well below 0.05): alone in its family the gated row keeps its p; pooled
    # with the 40 under Holm its p is multiplied by 41 and the regression is lost
    rows_b = {f"op:k{i:02d}": [1000.0, 1500.0, 800.0, 1200.0, 1100.0] for i in range(40)}
    rows_c = {f"op:k{i:02d}": [1300.0, 1200.0, 1600.0, 1000.0, 1500.0] for i in range(40)}
    rows_b["op:gated"] = [1000.0, 1100.0, 950.0, 1050.0, 1000.0]
    rows_c["op:gated"] = [1200.0, 1300.0, 1120.0, 1180.0, 1250.0]
    rows_b["overall:e2e"] = rows_c["overall:e2e"] = [1000.0] * 5
    base, comp = sset(rows_b), sset(rows_c)
    gated = by_row(judge(base, comp, Thresholds(correction="holm"), gated=lambda r: r == "op:gated"))["op:gated"]
    assert gated.p_adjusted == gated.p_value < 0.05 and gated.verdict == "regressed"
    pooled = by_row(judge(base, comp, Thresholds(correction="holm")))["op:gated"]
    assert pooled.p_adjusted > 0.05 and pooled.verdict != "regressed"


def test_one_occurrence_a_step_is_tested_on_the_steps():
    # 5 steps with a single all-reduce each: 5 "pairs" could never reach p < 0.05 with the
    # signed-rank test (its smallest p is 2 / 2**5 = 0.0625); the steps are tested instead
    b, c = [1000.0, 1010.0, 990.0, 1005.0, 995.0], [1200.0, 1212.0, 1188.0, 1206.0, 1194.0]
    base = with_instances({"comm:allreduce": b, "overall:e2e": [10_000.0] * 5}, {"comm:allreduce": [[v] for v in b]})
    comp = with_instances({"comm:allreduce": c, "overall:e2e": [10_000.0] * 5}, {"comm:allreduce": [[v] for v in c]})
    row = by_row(judge(base, comp))["comm:allreduce"]
    assert (row.basis, row.test, row.verdict) == ("steps", "welch-log", "regressed")


def test_reasons_are_records_whose_json_is_their_sentence():
    """Single steps, op:big +10 % while E2E moved +2 %: the reasons are an n=1 record and a
    rows-moved record naming op:big; the JSON holds their sentences (worded by
    ``render.reasons`` from the verdict's rows), which read back as the same kinds and words
    (renderers select by kind, never by words)."""
    from perfcmp.results.pair import N1, ROWS_MOVED, Verdict, encode_hook

    base = sset({"overall:e2e": [10000], "op:big": [1000]})
    comp = sset({"overall:e2e": [10200], "op:big": [1100]})
    verdict = judge(base, comp)
    assert [(r.kind, r.rows, r.names) for r in verdict.reasons] == [(N1, (), {}),
                                                                   (ROWS_MOVED, ("op:big",), {"label": "regressed"})]
    with pytest.raises(NotImplementedError, match="records"):  # no words of their own: the document words them
        msgspec.json.encode(verdict, enc_hook=encode_hook)
    worded = msgspec.structs.replace(verdict, reasons=sentences(verdict))
    encoded = msgspec.json.encode(worded, enc_hook=encode_hook)
    assert msgspec.json.decode(encoded)["reasons"] == ["n=1: floors only, no significance test",
                                                       "while E2E did not move: 1 row regressed: op:big (+10.0 %)"]
    again = msgspec.json.decode(encoded, type=Verdict)
    assert [r.kind for r in again.reasons] == [N1, ROWS_MOVED] and sentences(again) == sentences(verdict)
