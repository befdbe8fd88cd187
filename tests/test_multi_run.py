"""Several runs a side (issue 24, D2): steps nested in runs, the between-run test and its interval,
one warm-up rule for every run, and the CLI / baseline plumbing. Numbers worked by hand."""

from __future__ import annotations

import math

import pytest

from perfcmp.golden import check, load, save
from perfcmp.options import CompareOptions
from perfcmp.options import Policy
from perfcmp.policy import evaluate, exit_code, parse_gate, selects
from perfcmp.render.reasons import sentences
from perfcmp.base.errors import UsageError
from perfcmp.results.samples import SampleSet
from perfcmp.stats import pooled_t, t_quantile
from perfcmp.verdict import judge, run_medians, runs_skip

from conftest import SAMPLES


def sset(rows: dict[str, list[float]]) -> SampleSet:
    n = len(next(iter(rows.values())))
    return SampleSet(device="GPU", source="mem", steps=list(range(1, n + 1)),
                     rows={k: [float(v) for v in vals] for k, vals in sorted(rows.items())})


def run(free: float, gemm: float = 80_000, steps: int = 3) -> SampleSet:
    """One run: every step E2E = gemm + free (µs), computing = the one kernel."""
    return sset({"overall:e2e": [gemm + free] * steps, "overall:computing": [gemm] * steps,
                 "overall:free": [free] * steps, "kernel:gemm": [gemm] * steps})


def by_row(verdict) -> dict:
    return {r.row: r for r in verdict.rows}


def gate(*expressions: str, require: bool = False):
    policy = Policy(gates=tuple(parse_gate(e) for e in expressions), require_verdict=require)
    return policy, selects(policy)


def test_student_t_closed_forms():
    # df = 2: P(|T| >= t) = 1 - t / sqrt(2 + t^2); x = (0, 2), y = (1, 3): shift 1, s^2 = 2, se = sqrt(2)
    p, shift, se, df = pooled_t([0.0, 2.0], [1.0, 3.0])
    t = 1 / math.sqrt(2)
    assert (shift, df) == (1.0, 2) and se == pytest.approx(math.sqrt(2), rel=1e-15)
    assert p == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-12)
    # df = 1 (two runs against one): P(|T| >= t) = (2 / pi) atan(1 / t); x = (0, 2), y = (5,)
    p, shift, se, df = pooled_t([0.0, 2.0], [5.0])  # shift 4, s^2 = 2, se = sqrt(2 * 1.5) = sqrt(3)
    assert df == 1 and p == pytest.approx(2 / math.pi * math.atan(math.sqrt(3) / 4), rel=1e-12)
    assert pooled_t([1.0], [2.0]) is None  # no run-to-run variance to measure
    assert t_quantile(0.05, 2) == pytest.approx(4.302652729749464, rel=1e-10)  # t_{0.975, 2}
    assert t_quantile(0.05, 1) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-10)  # Cauchy: 12.706


def test_idle_time_varying_between_runs_is_measured_not_a_regression():
    # base runs: free 20 / 40 ms, comparison runs: free 30 / 50 ms; the device work identical (80 ms)
    base, comp = [run(20_000), run(40_000)], [run(30_000), run(50_000)]
    policy, selection = gate("e2e:+5%", require=True)
    verdict = judge(base[0], comp[0], gated=selection, base_runs=base[1:], comp_runs=comp[1:])
    e2e, free = by_row(verdict)["overall:e2e"], by_row(verdict)["overall:free"]
    # run medians 100 / 120 ms against 110 / 130 ms: medians 110 and 120 ms, +9.09 %
    assert (e2e.base_median, e2e.comp_median) == (110_000, 120_000) and (e2e.n_base, e2e.n_comp) == (2, 2)
    # logs: shift (ln 1.1 + ln(13/12)) / 2 = 0.087677; s^2 (ln 1.2)^2 / 2 and (ln(13/11))^2 / 2, pooled
    # 0.015287, se 0.12364, t 0.70913, df 2: p = 1 - t / sqrt(2 + t^2) = 0.5518
    assert e2e.basis == "runs" and e2e.test == "student-log" and e2e.p_value == pytest.approx(0.5518, abs=1e-4)
    assert e2e.verdict == "unchanged" and "measured over 2 base and 2 comparison runs (p = 0.552)" in e2e.note
    assert "device work moved less than 5 % of the E2E" in e2e.note
    # the interval is the test's: shift ± t_{0.975,2} se = 0.087677 ± 0.53198, applied to the 110 ms median
    assert e2e.ci_low == pytest.approx(110_000 * math.expm1(0.087677 - 0.53198), rel=2e-4)  # −39.46 ms
    assert e2e.ci_high == pytest.approx(110_000 * math.expm1(0.087677 + 0.53198), rel=2e-4)  # +94.40 ms
    assert e2e.ci_low < 0 < e2e.ci_high
    # free 30 → 40 ms (+33 %) is no longer held to the one-run allowance: its own test, p 0.5413
    assert free.verdict == "within noise" and free.p_value == pytest.approx(0.5413, abs=1e-4) and not free.note
    assert verdict.overall == "neutral" and verdict.n_steps == (6, 6)
    assert any(r.startswith("several runs a side (2 base, 2 comparison; 6 and 6 steps)")
               for r in sentences(verdict))
    results = evaluate(policy, verdict)
    assert not results[0].failed and not results[0].undecided and exit_code(policy, verdict, results) == 0


def test_device_work_regression_is_found_against_a_baseline_of_two_runs():
    # base gemm 80.0 / 80.4 ms (two runs), comparison 88 ms (one run); free 20 ms everywhere
    base, comp = [run(20_000, 80_000), run(20_000, 80_400)], run(20_000, 88_000)
    policy, selection = gate("e2e:+5%")
    verdict = judge(base[0], comp, gated=selection, base_runs=base[1:])
    gemm, e2e = by_row(verdict)["kernel:gemm"], by_row(verdict)["overall:e2e"]
    # logs: shift ln 1.1 − ln(1.005) / 2 = 0.092816, s^2 = (ln 1.005)^2 / 2, se = sqrt(s^2 · 1.5) = 0.0043193,
    # t = 21.489, df 1: p = (2 / pi) atan(1 / t) = 0.02960
    assert gemm.test == "student-log" and gemm.p_value == pytest.approx(0.02960, abs=2e-5)
    assert gemm.verdict == "regressed" and gemm.ci_low > 0  # decided: its interval excludes 0
    # E2E 100.2 → 108 ms (+7.78 %), carried by the kernel: regressed through its parts
    assert e2e.relative == pytest.approx(7_800 / 100_200) and e2e.verdict == "regressed"
    assert "computing +7.8 % of the E2E, decisive" in e2e.note and "kernel:gemm" in e2e.note
    assert verdict.overall == "regression"
    results = evaluate(policy, verdict)
    assert results[0].failed and exit_code(policy, verdict, results) == 1


def test_e2e_beyond_the_measured_run_to_run_spread_is_a_regression_without_device_rows():
    # no kernel rows moved: E2E's own between-run test decides; base 100.0 / 100.5 ms, comparison 112.0 / 112.4
    base = [sset({"overall:e2e": [100_000] * 2}), sset({"overall:e2e": [100_500] * 2})]
    comp = [sset({"overall:e2e": [112_000] * 2}), sset({"overall:e2e": [112_400] * 2})]
    e2e = by_row(judge(base[0], comp[0], base_runs=base[1:], comp_runs=comp[1:]))["overall:e2e"]
    assert e2e.verdict == "regressed" and e2e.p_value < 0.001 and e2e.ci_low > 0


def test_one_warm_up_rule_for_every_run():
    # each run: 3 steps; run 2 of the comparison has a slow first step (150 vs 100): 1 dropped from every run
    runs_b = [sset({"overall:e2e": [100, 100, 100]}), sset({"overall:e2e": [101, 100, 100]})]
    runs_c = [sset({"overall:e2e": [100, 100, 100]}), sset({"overall:e2e": [150, 100, 100]})]
    (skips_b, skips_c), why = runs_skip(runs_b, runs_c, None)
    assert skips_b == [1, 1] and skips_c == [1, 1] and "comparison run 2 1 dropped (step 1)" in why
    assert runs_skip(runs_b, runs_c, 5)[0] == ([2, 2], [2, 2])  # --skip-steps keeps one step a run
    medians = run_medians(runs_c, [1, 1])
    assert medians.steps == [1, 2] and medians.rows["overall:e2e"] == [100.0, 100.0]


def test_a_run_given_twice_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="given twice"):
        CompareOptions(base_path="a", comp_path="b", base_runs=("./a",))
    with pytest.raises(UsageError, match="--base-step"):
        CompareOptions(base_path="a", comp_path="b", comp_runs=("c",), base_step=1, comp_step=1)
    assert CompareOptions(base_path="a", comp_path="b").as_dict().get("base_runs") is None  # one run: as before


@pytest.mark.skipif(not (SAMPLES / "gpu").is_dir(), reason="shared samples absent")
def test_baseline_of_several_runs_round_trips(tmp_path):
    tiny, other = str(SAMPLES / "gpu" / "tiny_base.pt.trace.json.gz"), str(SAMPLES / "gpu" / "tiny_test.pt.trace.json.gz")
    options = CompareOptions(base_path=tiny, comp_path=tiny)
    save("one", tiny, options, str(tmp_path))
    assert b'"runs"' not in (tmp_path / "one.json").read_bytes()  # a one-run baseline is as before
    save("two", tiny, options, str(tmp_path), runs=(other,))
    stored = load("two", str(tmp_path))
    assert len(stored.runs) == 1 and stored.runs[0].steps == [1009, 1010]  # ProfilerStep#1009, #1010 of tiny_test
    result = check("two", tiny, CompareOptions(base_path="two", comp_path=tiny), str(tmp_path))
    assert any(r.startswith("several runs a side (2 base, 1 comparison;") for r in sentences(result.verdict))
