"""E2E decided through its parts, gate limits as floors, one warm-up rule for the pair, and
Wilcoxon's count after dropping zeros (perfcmp.verdict, issue 24). Numbers worked by hand."""

from __future__ import annotations

from perfcmp.options import Policy
from perfcmp.policy import evaluate, exit_code, parse_gate, selects
from perfcmp.results.samples import HOST_OPS, TIME_BASE, SampleSet
from perfcmp.verdict import HOST_ALLOWANCE, RUN_ALLOWANCE, judge


def sset(rows: dict[str, list[float]], instances: dict[str, list[list[float]]] | None = None) -> SampleSet:
    n = len(next(iter(rows.values())))
    return SampleSet(device="GPU", source="mem", steps=list(range(1, n + 1)),
                     rows={k: [float(v) for v in vals] for k, vals in sorted(rows.items())},
                     instances=instances or {})


def by_row(verdict) -> dict:
    return {r.row: r for r in verdict.rows}


def gated(*expressions: str):
    policy = Policy(gates=tuple(parse_gate(e) for e in expressions))
    return policy, selects(policy)


def test_idle_time_alone_moving_e2e_is_not_a_regression():
    # same device work (computing 80 ms both runs), free time +17 ms: E2E +17 % from idle time alone
    base = sset({"overall:e2e": [100_000, 101_000, 99_000], "overall:computing": [80_000, 80_100, 79_900],
                 "overall:free": [20_000, 20_900, 19_100], "kernel:gemm": [80_000, 80_100, 79_900]})
    comp = sset({"overall:e2e": [117_000, 118_000, 116_000], "overall:computing": [80_050, 80_000, 80_100],
                 "overall:free": [36_950, 38_000, 35_900], "kernel:gemm": [80_050, 80_000, 80_100]})
    policy, selection = gated("e2e:+5%")
    verdict = judge(base, comp, gated=selection)
    e2e, free = by_row(verdict)["overall:e2e"], by_row(verdict)["overall:free"]
    assert e2e.relative == 0.17 and e2e.verdict == "unchanged"
    # computing +50 µs = +0.1 % of the E2E (rounded), the rest +16.95 % ≤ the 20 % allowance
    assert e2e.note.startswith("E2E +17.0 %: computing +0.1 % of the E2E, communication +0.0 % of the E2E; "
                             "not explained by decided device work +17.0 %: not a regression")
    assert "run-to-run variation" in e2e.note and "one run a side" in e2e.note
    assert free.verdict == "unchanged" and "moved +17.0 % of the E2E" in free.note  # 36 950 − 20 000 = 16 950 µs
    assert verdict.overall == "neutral" and not any(r.verdict == "regressed" for r in verdict.rows)
    results = evaluate(policy, verdict)
    assert not results[0].failed and not results[0].undecided and exit_code(policy, verdict, results) == 0


def test_idle_time_beyond_the_allowance_is_inconclusive_never_regressed():
    base = sset({"overall:e2e": [100_000] * 3, "overall:computing": [80_000] * 3, "overall:free": [20_000] * 3})
    comp = sset({"overall:e2e": [125_000, 126_000, 124_000], "overall:computing": [80_000] * 3,
                 "overall:free": [45_000, 46_000, 44_000]})
    policy, selection = gated("e2e:+5%")
    verdict = judge(base, comp, gated=selection)
    e2e = by_row(verdict)["overall:e2e"]
    assert RUN_ALLOWANCE == 0.20 and e2e.verdict == "inconclusive"  # the rest: +25 % > 20 %
    assert "beyond the run-to-run allowance" in e2e.note
    assert by_row(verdict)["overall:free"].verdict == "inconclusive"
    policy = Policy(gates=policy.gates, require_verdict=True)
    results = evaluate(policy, verdict)
    assert results[0].undecided and exit_code(policy, verdict, results) == 3


def test_a_host_only_trace_has_no_device_work_to_decide_e2e():
    # CPU build of torch: Computing is host op time, which moves between processes; +12 % of
    # E2E in host ops is within the 20 % allowance: not a regression on one run a side
    base = sset({"overall:e2e": [100_000] * 3, "overall:computing": [90_000, 90_500, 89_500]})
    comp = sset({"overall:e2e": [112_000] * 3, "overall:computing": [102_000, 102_500, 101_500]})
    base.provenance = comp.provenance = {TIME_BASE: HOST_OPS}
    e2e = by_row(judge(base, comp))["overall:e2e"]
    assert e2e.verdict == "unchanged"
    assert "computing +12.0 % of the E2E (host op time: no device kernels)" in e2e.note


def test_a_host_only_change_beyond_the_host_allowance_is_a_regression():
    # +45 ms of host op time on a 100 ms step: 45 % > the 40 % host allowance, and E2E's Welch
    # test on 3 vs 3 steps is significant
    base = sset({"overall:e2e": [100_000, 100_500, 99_500], "overall:computing": [90_000, 90_500, 89_500]})
    comp = sset({"overall:e2e": [145_000, 145_500, 144_500], "overall:computing": [135_000, 135_500, 134_500]})
    base.provenance = comp.provenance = {TIME_BASE: HOST_OPS}
    verdict = judge(base, comp)
    e2e = by_row(verdict)["overall:e2e"]
    assert e2e.p_adjusted < 0.05 and e2e.verdict == "regressed" and verdict.overall == "regression"
    assert "beyond the run-to-run variation of host-only traces (±40 % of the E2E)" in e2e.note


def test_a_host_only_category_on_one_step_is_never_decided_by_the_floors_alone():
    # one step a side of a CPU-only trace: a category's host op time +12 ms on a 100 ms step
    # (+12 % of the E2E) clears the floors (5 %, 20 µs, 0.5 % of the step), but host time moves
    # between processes: within the 40 % allowance, "unchanged"; +45 ms (45 %) is "inconclusive"
    base = sset({"overall:e2e": [100_000], "overall:computing": [90_000], "overall:computing.matmul": [40_000]})
    small = sset({"overall:e2e": [112_000], "overall:computing": [102_000], "overall:computing.matmul": [52_000]})
    large = sset({"overall:e2e": [145_000], "overall:computing": [135_000], "overall:computing.matmul": [85_000]})
    for side in (base, small, large):
        side.provenance = {TIME_BASE: HOST_OPS}
    matmul = by_row(judge(base, small))["overall:computing.matmul"]
    assert HOST_ALLOWANCE == 0.40 and matmul.n1 and matmul.verdict == "unchanged"
    assert "moved +12.0 % of the E2E on one step a side, within the ±40 %" in matmul.note
    verdict = judge(base, large)
    assert by_row(verdict)["overall:computing.matmul"].verdict == "inconclusive"  # 45 000 / 100 000 > 0.40
    assert not any(r.verdict in ("regressed", "improved") for r in verdict.rows if r.row != "overall:e2e")
    # the same step on a device trace: kernel time repeats between runs, the floors decide
    device_base = sset({"overall:e2e": [100_000], "overall:computing": [90_000], "overall:computing.matmul": [40_000]})
    device_comp = sset({"overall:e2e": [112_000], "overall:computing": [102_000], "overall:computing.matmul": [52_000]})
    assert by_row(judge(device_base, device_comp))["overall:computing.matmul"].verdict == "regressed"


def _device_pair(slow: float, e2e_comp: float) -> tuple[SampleSet, SampleSet]:
    """One step a side; 10 occurrences of a 2 ms convolution-backward kernel, ``slow`` × slower."""
    conv_b, conv_c = [2_000.0] * 10, [2_000.0 * slow] * 10
    grow = sum(conv_c) - sum(conv_b)
    base = sset({"overall:e2e": [100_000], "overall:computing": [80_000], "overall:free": [20_000],
                 "kernel:conv_bwd": [sum(conv_b)]}, {"kernel:conv_bwd": [conv_b]})
    comp = sset({"overall:e2e": [e2e_comp], "overall:computing": [80_000 + grow], "overall:free": [20_000],
                 "kernel:conv_bwd": [sum(conv_c)]}, {"kernel:conv_bwd": [conv_c]})
    return base, comp


def test_device_work_regression_is_decided_through_its_kernels_at_one_step():
    base, comp = _device_pair(1.5, 110_000)  # +10 ms of kernels, E2E +10 %
    policy, selection = gated("e2e:+5%")
    verdict = judge(base, comp, gated=selection)
    rows = by_row(verdict)
    kernel = rows["kernel:conv_bwd"]
    # 10 pairs, every log ratio ln 1.5 (all tied): T+ = 55, μ = 27.5, σ² = 96.25 − (1000 − 10)/48
    # = 75.625, z = 27/8.6963 = 3.1048, p = 0.00190
    assert kernel.test == "wilcoxon-signed-rank" and abs(kernel.p_value - 0.0019040) < 1e-6
    assert kernel.verdict == "regressed"
    e2e = rows["overall:e2e"]
    assert e2e.verdict == "regressed" and verdict.overall == "regression"
    assert e2e.note.startswith("E2E +10.0 %: computing +10.0 % of the E2E, decisive")
    assert "kernel:conv_bwd (+50.0 %" in e2e.note
    results = evaluate(policy, verdict)
    assert results[0].failed and exit_code(policy, verdict, results) == 1


def test_a_gate_limit_is_the_floor():
    base, comp = _device_pair(1.45, 104_500)  # +4.5 ms of kernels: E2E +4.5 %
    assert by_row(judge(base, comp))["overall:e2e"].verdict == "unchanged"  # under the default 5 % floor
    policy, selection = gated("e2e:+3%")
    verdict = judge(base, comp, gated=selection)
    assert by_row(verdict)["overall:e2e"].verdict == "regressed"
    results = evaluate(policy, verdict)
    assert results[0].failed and exit_code(policy, verdict, results) == 1


def test_warm_up_is_decided_once_for_the_pair():
    steps = [150_000, 100_000, 101_000, 99_000, 100_500, 99_500]
    reordered = [100_000, 150_000, 101_000, 99_000, 100_500, 99_500]  # the slow step second: no warm-up here
    base, comp = sset({"overall:e2e": steps}), sset({"overall:e2e": reordered})
    verdict = judge(base, comp)
    # the base's rule drops 1 (150 > 1.2 × 100 000); the pair drops 1 from each side
    assert verdict.skip_steps == (1, 1)
    assert "decided once for the pair" in verdict.skip_reason
    assert verdict.skip_steps == judge(comp, base).skip_steps


def test_wilcoxon_counts_the_pairs_left_after_dropping_zeros():
    # 8 pairs, 5 unchanged: 3 that moved are fewer than the 6 the signed-rank test needs
    b = [[1_000.0] * 8]
    c = [[1_000.0] * 5 + [1_500.0] * 3]
    base = sset({"overall:e2e": [100_000], "kernel:k": [8_000]}, {"kernel:k": b})
    comp = sset({"overall:e2e": [100_000], "kernel:k": [9_500]}, {"kernel:k": c})
    row = by_row(judge(base, comp))["kernel:k"]
    assert row.test != "wilcoxon-signed-rank"
    # 6 of 8 moved: tested, on 6 pairs
    c6 = [[1_000.0] * 2 + [1_500.0] * 6]
    comp6 = sset({"overall:e2e": [100_000], "kernel:k": [11_000]}, {"kernel:k": c6})
    row6 = by_row(judge(base, comp6))["kernel:k"]
    assert row6.test == "wilcoxon-signed-rank" and row6.n_base_samples == 6
