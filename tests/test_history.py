"""``perfcmp history``: the segmentation on literal series worked out by hand, the reporting
rules (floors, separation, gaps, order, gates), and the end-to-end check on generated runs.

End to end: 6 GPU runs from the project's generator (4 steps, 1 layer, seed = run number);
from run 4 on every GEMM (``aten::mm``) is 27 % slower, which makes E2E about 10 % slower
(4.261 → 4.704 ms per step). The history must report that change at run 4 and nowhere else.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import numpy as np
import openpyxl
import pytest

import simulator
from perfcmp.cli import main
from perfcmp.history.changepoints import MIN_NOISE, median_interval, noise, segment
from perfcmp.history import HistoryOptions
from perfcmp.history.engine import analyse, detect
from perfcmp.results.history import Point
from perfcmp.policy import load_policy
from perfcmp.base.errors import UsageError
from perfcmp.results.samples import SampleSet
from perfcmp.verdict import Thresholds

SCHEMA = Path(__file__).resolve().parents[1] / "report_templates" / "history.schema.json"
NAMES = [f"run{i}" for i in range(1, 7)]


def cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# --- the segmentation, by hand ----------------------------------------------------------------


def test_one_step_is_one_change_when_the_split_saves_more_than_the_penalty():
    # One segment: each value is ln(1.1)/2 from the mean, SSE = 6 (ln 1.1 / 2)² = 0.013626;
    # split at 3: SSE 0. So the split wins exactly when the penalty is below 0.013626.
    y = np.log([10, 10, 10, 11, 11, 11])
    assert 6 * (math.log(1.1) / 2) ** 2 == pytest.approx(0.013626, abs=1e-6)
    assert segment(y, 0.0136) == [3]
    assert segment(y, 0.0137) == []


def test_two_steps_and_flat_series():
    # [0,0 | 5,5 | 9,9]: two changes cost 2 × 1; the best single split ([0,0] | [5,5,9,9]) leaves
    # SSE 4 × 2² = 16; no split leaves 62.83.
    assert segment(np.array([0, 0, 5, 5, 9, 9.0]), 1.0) == [2, 4]
    assert segment(np.array([3.0, 3.0, 3.0, 3.0]), 1e-9) == []
    assert segment(np.array([1.0]), 0.0) == []


def test_noise_is_the_median_successive_difference_scaled_to_sigma():
    # |differences| 0.02, 0.03, 0.02, 0.01, 0.02 -> median 0.02; σ = 0.02 / (0.6745 √2) = 0.020966
    y = np.array([0.0, 0.02, -0.01, 0.01, 0.0, 0.02])
    assert noise(y) == pytest.approx(0.02 / (0.6745 * math.sqrt(2)))
    assert noise(y, [0.05, 0.05, 0.05]) == 0.05  # the runs' own standard errors are a floor
    assert noise(np.log([10, 10, 10, 11, 11, 11])) == MIN_NOISE  # median difference 0
    # 3 runs: the median of 2 differences would be half the step; only the runs' own noise counts
    assert noise(np.log([10, 10, 11])) == MIN_NOISE
    assert noise(np.log([10, 10, 11]), [0.004]) == 0.004
    # runs in two levels 8 % apart, met twice: the median difference is 0, the root mean square
    # of the differences without the largest is √(0.08² / 8) = 0.028284, σ = 0.028284 / √2 = 0.02
    assert noise(np.array([0, 0, 0, 0, 0.08, 0.08, 0.08, 0.08, 0, 0])) == pytest.approx(0.02)


def test_three_runs_are_enough_for_a_step():
    s = _detect("overall:e2e", [10, 10, 11], 0.01)
    assert [(c.index, c.run) for c in s.change_points] == [(3, "run3")]


def _points(medians_ms, spread):
    """Points in µs with intervals of ± ``spread`` (relative) around each median."""
    return [Point(median=m * 1000, ci_low=m * 1000 * (1 - spread), ci_high=m * 1000 * (1 + spread), n=4)
            if m is not None else Point() for m in medians_ms]


def _detect(key, medians_ms, spread, steps=None):
    points = _points(medians_ms, spread)
    e2e = [p.median for p in points]
    return detect(key, points, steps or [None] * len(points), e2e, Thresholds(), NAMES[: len(points)])


def test_a_ten_percent_step_is_reported_at_its_first_run():
    s = _detect("overall:e2e", [10, 10, 10, 11, 11, 11], 0.01)
    assert [(c.index, c.run, c.before, c.after, c.direction, c.evidence) for c in s.change_points] == [
        (4, "run4", 10000.0, 11000.0, "regression", "intervals")]
    assert s.change_points[0].relative == pytest.approx(0.1)
    assert s.candidates == [] and s.scale == "log"


def test_a_constant_noisy_series_has_no_change_point():
    # log medians move by ≈ ±2-3 % between runs: σ = 0.0313, penalty 3 σ² ln 6 = 0.00527, above
    # the whole series' SSE (≈ 0.0018), so not even a candidate boundary.
    s = _detect("overall:e2e", [10.0, 10.3, 9.8, 10.1, 9.9, 10.2], 0.03)
    assert s.noise == pytest.approx(0.0313, abs=5e-4)
    assert s.penalty == pytest.approx(0.00527, abs=2e-4)
    assert s.change_points == [] and s.candidates == []


def test_an_improvement_and_a_step_under_the_floor():
    s = _detect("overall:e2e", [10, 10, 10, 8, 8, 8], 0.01)
    assert [(c.index, c.direction, round(c.relative, 3)) for c in s.change_points] == [(4, "improvement", -0.2)]
    # +3 %: the segmentation finds it (tight intervals, tiny penalty) but the 5 % floor rejects it
    s = _detect("overall:e2e", [10, 10, 10, 10.3, 10.3, 10.3], 0.001)
    assert s.change_points == []
    assert [(c.index, c.reason) for c in s.candidates] == [(4, "+3.0 % is under the 5 % floor")]


def test_a_step_whose_runs_are_not_separated_is_only_a_candidate():
    # +30 % but the runs either side overlap (8–12 vs 10.4–15.6 ms) and 3 vs 3 steps cannot reach
    # p < 0.05 with Mann-Whitney (its smallest p is 0.1)
    steps = [np.array([8e3, 10e3, 12e3])] * 3 + [np.array([10.4e3, 13e3, 15.6e3])] * 3
    s = _detect("overall:e2e", [10, 10, 10, 13, 13, 13], 0.2, steps)
    assert s.change_points == []
    assert len(s.candidates) == 1 and "not separated" in s.candidates[0].reason
    # the same medians with 5 vs 5 well-apart steps: Mann-Whitney separates them (exact p = 0.0079)
    steps = [np.array([9.5e3, 9.8e3, 10e3, 10.2e3, 10.5e3])] * 3 + [np.array([12.5e3, 12.8e3, 13e3, 13.2e3, 13.5e3])] * 3
    s = _detect("overall:e2e", [10, 10, 10, 13, 13, 13], 0.2, steps)
    assert [(c.index, c.evidence) for c in s.change_points] == [(4, "mann-whitney p = 0.0079")]


def test_steps_that_separate_two_runs_do_not_make_a_change_within_the_run_to_run_noise():
    # one run a point, tight steps (intervals ±0.5 %: every neighbour pair is separated by them),
    # but the runs themselves move ±5.2 %: successive log differences ln 1.052 = 0.050693 (four
    # of them) and ln 1.12 (the step), median 0.050693, σ = 0.050693 / (0.6745 √2) = 0.053144;
    # penalty 3 σ² ln 6 = 0.015181. A +12 % step between [10, 10.52, 10] and [11.2, 11.7824,
    # 11.2] ms: the segments' mean logs are ln 1.12 = 0.113329 apart, z = 0.113329 /
    # (0.053144 √(1/3 + 1/3)) = 2.61 — the split pays (z > √(3 ln 6) = 2.32) but is < 3 σ.
    s = _detect("overall:e2e", [10, 10.52, 10, 11.2, 11.7824, 11.2], 0.005)
    assert s.noise == pytest.approx(0.053144, abs=1e-6) and s.penalty == pytest.approx(0.015181, abs=1e-6)
    assert s.change_points == []
    assert [(c.index, c.reason) for c in s.candidates] == [(4, (
        "the runs' steps are separated (intervals) but the segments are 2.6 σ of run-to-run noise apart (< 3 σ): "
        "steps of one run do not show its run-level offset"))]
    # +20 % with the same noise: z = ln 1.2 / 0.043392 = 4.20, reported as before
    s = _detect("overall:e2e", [10, 10.52, 10, 12, 12.624, 12], 0.005)
    assert [(c.index, c.evidence) for c in s.change_points] == [(4, "intervals")]


def test_single_step_runs_need_segments_apart_from_the_run_to_run_noise():
    points = [Point(median=m * 1000.0, n=1) for m in (10, 10, 10, 12, 12, 12)]
    s = detect("overall:e2e", points, [None] * 6, [p.median for p in points], Thresholds(), NAMES)
    # successive differences 0, 0, ln 1.2, 0, 0: median 0, so σ is the 1e-4 floor; the segment
    # means are ln 1.2 = 0.18232 apart: z = 0.18232 / (1e-4 · √(1/3 + 1/3)) = 2233.0
    assert [(c.index, c.evidence) for c in s.change_points] == [(4, "n=1: segments 2233.0 σ apart")]


def _one_step(medians_ms):
    points = [Point(median=m * 1000.0, n=1) for m in medians_ms]
    names = [f"run{i}" for i in range(1, len(points) + 1)]
    return detect("overall:e2e", points, [None] * len(points), [p.median for p in points], Thresholds(), names)


def test_one_slow_run_is_not_a_change_point():
    s = _one_step([100, 101, 99, 100, 130, 100, 99, 101, 100, 100])
    assert s.change_points == []
    # the slow run moves two differences by ln 1.3 = 0.262364; without the largest, the
    # differences are 0, ln(101/100) = 0.00995 twice, 0.01005 twice, 0.02000 twice and 0.262364:
    # Σ d² = 0.070035, σ = √(0.070035 / 8 / 2) = 0.066160, above the median's 0.01005 /
    # (0.6745 √2) = 0.010536; the penalty 3 σ² ln 10 = 0.030236 exceeds what any boundary around
    # one run saves: no boundary at all
    assert s.noise == pytest.approx(0.066160, abs=2e-6) and s.penalty == pytest.approx(0.030236, abs=2e-6)
    assert s.candidates == []
    # with σ as tight as the other runs (the median's), the segmentation would put the slow run
    # and its next into a segment of their own, boundaries that do not persist
    y = np.log([100, 101, 99, 100, 130, 100, 99, 101, 100, 100])
    assert segment(y, 3 * 0.010536 ** 2 * math.log(10), 2, last_min=1) == [3, 5]


def test_one_step_runs_need_three_runs_a_segment_so_two_slow_runs_are_not_a_level():
    # differences ln(112/130) = −0.149036 and ln(100/112) = −0.113329, then three ≈ 0.00995, three
    # ≈ 0.01005 and one 0.02000: without the largest Σ d² = 0.013843, σ = √(0.013843 / 8 / 2) =
    # 0.029415, penalty 3 σ² ln 10 = 0.005977. Segments of two runs would set the slow pair apart
    # (8.1 σ); of three, the best boundary is after 130, 112, 100, which does not persist (100 is
    # on the far side of the midpoint)
    values = [130, 112, 100, 101, 99, 100, 101, 100, 99, 100]
    s = _one_step(values)
    assert s.noise == pytest.approx(0.029415, abs=2e-6) and s.penalty == pytest.approx(0.005977, abs=2e-6)
    assert s.change_points == [] and [c.index for c in s.candidates] == [4]
    assert "does not persist" in s.candidates[0].reason
    assert segment(np.log(values), 0.005977, 2, last_min=1) == [2]
    assert segment(np.log(values), 0.005977, 3, last_min=1) == [3]


def test_a_persistent_ten_percent_step_is_found_at_its_run():
    s = _one_step([100, 101, 99, 100, 101, 111, 110, 112, 111, 110])
    # ten runs: the runs' order decides (test_history_permutation): ranks 1..5 then 6..10, a
    # perfect split in the middle, p = 2/252 = 0.0079 (the seeded draws give 0.0077); before,
    # the segments' distance: |successive differences| median ln(101/100) ≈ 0.00995 -> σ =
    # 0.01043, segment means of the logs 0.10056 apart: z = 0.10056 / (0.010431 · √(2/5)) = 15.24
    [change] = s.change_points
    assert (change.index, change.run) == (6, "run6") and change.evidence == "n=1: runs p = 0.0077"


def test_the_newest_one_step_run_alone_is_not_yet_a_change_point():
    s = _one_step([100, 101, 99, 100, 101, 100, 99, 100, 101, 125])
    assert s.change_points == []
    assert [c.index for c in s.candidates] == [10] and "one more run must confirm" in s.candidates[0].reason


def test_gaps_are_listed_and_changes_land_on_the_run_index():
    s = _detect("op:aten::mm", [10, None, 10, 10, 12, 12], 0.01)
    assert s.gaps == [2]
    assert [(c.index, c.run) for c in s.change_points] == [(5, "run5")]
    too_few = _detect("op:aten::mm", [10, None, None, None, None, 12], 0.01)
    assert too_few.gaps == [2, 3, 4, 5] and too_few.noise is None and too_few.change_points == []


def test_a_series_with_a_zero_is_segmented_on_a_linear_scale():
    s = _detect("overall:comm", [0, 0, 0, 2, 2, 2], 0.0)
    assert s.scale == "linear"
    assert [(c.index, c.relative, c.direction) for c in s.change_points] == [(4, None, "regression")]


def test_median_interval_is_deterministic():
    values = np.array([4.0, 1.0, 3.0, 2.0])
    low, high = median_interval(values)
    assert (low, high) == median_interval(values[::-1])  # seeded by size: order does not matter
    assert 1.0 <= low <= 2.5 <= high <= 4.0
    assert median_interval(np.array([5.0])) == (None, None)


# --- the analysis on literal sample sets ------------------------------------------------------


def _samples(e2e_ms, provenance=None, extra=None):
    steps = [e2e_ms * 1000 * f for f in (0.99, 1.0, 1.01, 1.0)]
    rows = {"overall:e2e": steps, "overall:computing": [v * 0.7 for v in steps],
            "op:aten::mm": [v * 0.3 for v in steps], **(extra or {})}
    return SampleSet(device="GPU", source="x", steps=[1, 2, 3, 4], rows=rows, provenance=provenance or {})


def _runs(levels, names=None, **kw):
    names = names or [f"run{i}" for i in range(1, len(levels) + 1)]
    return [(n, n, "profile", _samples(level, **kw), ()) for n, level in zip(names, levels)]


def _options(*gates, require=False):
    return HistoryOptions(paths=("a", "b", "c"), policy=load_policy(None, list(gates), require))


def test_runs_are_ordered_naturally_by_name_unless_told_otherwise():
    runs = _runs([10, 10, 10, 11], names=["run10", "run9", "run1", "run11"])
    h = analyse(runs, _options())
    assert [r.name for r in h.runs] == ["run1", "run9", "run10", "run11"] and h.order == "name"
    assert [(c.key, c.index) for c in h.change_points if c.key == "overall:e2e"] == [("overall:e2e", 4)]
    given = analyse(runs, HistoryOptions(paths=("a", "b", "c"), order="given"))
    assert [r.name for r in given.runs] == ["run10", "run9", "run1", "run11"] and given.order == "given"


def test_runs_are_ordered_by_recording_time_when_every_run_has_one():
    runs = [(n, n, "profile", _samples(10, provenance={"recorded at": t}), ())
            for n, t in (("b", "2026-11-03T00:00:00Z"), ("a", "2026-11-05T00:00:00Z"), ("c", "2026-11-01T00:00:00Z"))]
    h = analyse(runs, _options())
    assert h.order == "time" and [r.name for r in h.runs] == ["c", "b", "a"]


def test_a_key_missing_in_some_runs_is_kept_with_gaps():
    runs = _runs([10, 10, 10, 10])
    runs[1][3].rows["op:aten::gelu"] = [None] * 4
    for i in (0, 2, 3):
        runs[i][3].rows["op:aten::gelu"] = [500.0] * 4
    h = analyse(runs, _options())
    gelu = next(s for s in h.series if s.key == "op:aten::gelu")
    assert gelu.gaps == [2] and gelu.points[1].median is None and gelu.points[0].median == 500.0
    assert [s.key for s in h.series][:2] == ["overall:e2e", "overall:computing"]


def test_gates_fail_on_the_latest_regression_beyond_their_limit():
    runs = _runs([10, 10, 10, 11, 11, 11])
    assert analyse(runs, _options("e2e:+5%")).exit_code == 1
    h = analyse(runs, _options("e2e:+15%"))
    assert h.exit_code == 0 and not h.gates[0].failed
    assert analyse(runs, _options()).exit_code == 0
    back = _runs([10, 10, 11, 11, 10, 10])  # the latest change point is the fix: nothing fails
    assert analyse(back, _options("e2e:+5%")).exit_code == 0
    # a pattern gate on a key no run has is a typo: a usage error naming the closest keys
    with pytest.raises(UsageError, match=r"'op:aten::nothing' matches no key of the history; did you mean op:aten::mm"):
        analyse(runs, _options("op:aten::nothing:+5%"))


# --- end to end -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """6 GPU runs; from run 4 on every aten::mm kernel is 27 % slower (E2E about +10 %)."""
    root = tmp_path_factory.mktemp("history") / "runs"
    root.mkdir()
    for i in range(1, 7):
        simulator.write_gpu_trace(str(root / f"run{i}.pt.trace.json.gz"), steps=4, layers=1, seed=i - 1,
                                   scale=[("aten::mm", 1.27)] if i >= 4 else [])
    return root


def test_a_ten_percent_step_at_run_4_is_reported_there_and_nowhere_else(run_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "history", run_dir, "--fail-on", "e2e:+5%", "--format", "console,json,md,xlsx",
                         "-o", "out")
    assert code == 1, out + err
    doc = json.loads(next((tmp_path / "out").glob("performance_history_*.json")).read_bytes())
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    e2e = next(s for s in doc["series"] if s["key"] == "overall:e2e")
    assert [(c["index"], c["run"], c["direction"]) for c in e2e["change_points"]] == [(4, "run4.pt.trace.json.gz",
                                                                                       "regression")]
    change = e2e["change_points"][0]
    # each step's E2E: from the host's entry into it to its entry into the next (the last: to its
    # exit); per run the median of its 4 steps, 4295.3, 4289.5, 4281.2 before (median 4289.5) and
    # 4705.0, 4722.9, 4717.4 after (median 4717.4), from the generated traces' ProfilerStep spans
    assert change["before"] == pytest.approx(4289.5, abs=1) and change["after"] == pytest.approx(4717.4, abs=1)
    assert 0.09 < change["relative"] < 0.11
    assert {c["index"] for c in doc["change_points"]} == {4}  # every key that moved, moved at run 4
    assert not any(s["candidates"] for s in doc["series"])
    assert "overall:comm" not in {c["key"] for c in doc["change_points"]}  # the GEMMs are not communication
    assert "gate e2e:+5%: FAILED" in out and "run 4: run4.pt.trace.json.gz" in out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert str(tmp_path) not in json.dumps(doc)  # the run directory is outside the cwd: base names only
    workbook = openpyxl.load_workbook(next((tmp_path / "out").glob("performance_history_*.xlsx")), read_only=True)
    assert workbook.sheetnames == ["HistoryMedians", "ChangePoints", "HistoryIntervals", "Notes"]
    rows = list(workbook["HistoryMedians"].iter_rows(min_row=3, values_only=True))
    assert rows[0][:7] == ("Run #", "Run", "Source", "Kind", "Steps", "Skipped", "overall:e2e (ms)")
    assert [r[0] for r in rows[1:]] == [1, 2, 3, 4, 5, 6]
    md = next((tmp_path / "out").glob("performance_history_*.md")).read_text()
    assert md.startswith("## perfcmp history: ") and "| 4 | run4.pt.trace.json.gz | overall:e2e |" in md


def test_without_gates_the_exit_code_is_0_and_outputs_are_deterministic(run_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first, second = tmp_path / "first.xlsx", tmp_path / "second.xlsx"
    code, out, _ = cli(capsys, "history", run_dir, "--format", "console,json,md,xlsx", "-o", first)
    assert code == 0 and "regression" in out
    cli(capsys, "history", run_dir, "--format", "json,md,xlsx", "-o", second)
    for suffix in (".json", ".md", ".xlsx"):
        assert first.with_suffix(suffix).read_bytes() == second.with_suffix(suffix).read_bytes()


def test_baselines_saved_with_golden_save_are_runs_too(run_dir, tmp_path, capsys):
    store = tmp_path / "baselines"
    for i in range(1, 7):
        assert cli(capsys, "golden", "save", f"v1.{i}", run_dir / f"run{i}.pt.trace.json.gz", "--dir", store)[0] == 0
    code, out, _ = cli(capsys, "history", store, "--fail-on", "e2e:+5%", "--format", "console,json", "-o", tmp_path)
    assert code == 1
    doc = json.loads(next(tmp_path.glob("performance_history_*.json")).read_bytes())
    assert [(r["name"], r["kind"]) for r in doc["runs"]][:2] == [("v1.1", "baseline"), ("v1.2", "baseline")]
    assert [(c["key"], c["index"], c["run"]) for c in doc["change_points"] if c["key"] == "overall:e2e"] == [
        ("overall:e2e", 4, "v1.4")]
    # baselines and profiles mix, in the order given
    code, out, _ = cli(capsys, "history", store / "v1.1.json", store / "v1.2.json", run_dir / "run3.pt.trace.json.gz",
                       run_dir / "run4.pt.trace.json.gz", "--order", "given")
    assert code == 0 and "run 4: " in out


@pytest.mark.parametrize("args, message", [
    (["a.json", "b.json"], "history needs at least 3 runs"),
    (["missing", "b", "c"], "missing: no such file or directory"),
    (["{runs}", "--order", "time"], "--order time: expected auto, name, given"),
    (["{runs}", "--fail-on", "e2e:5%"], "bad gate"),
    (["{runs}", "--format", "console,pdf"], "unknown output format(s) pdf"),
])
def test_bad_input_is_one_line_and_exit_2(run_dir, capsys, args, message):
    code, out, err = cli(capsys, "history", *[str(run_dir) if a == "{runs}" else a for a in args])
    assert code == 2 and out == ""
    assert err.startswith("perfcmp: error: ") and err.count("\n") == 1 and message in err


def test_a_directory_with_too_few_runs_or_a_foreign_file(tmp_path, run_dir, capsys):
    few = tmp_path / "few"
    few.mkdir()
    for i in (1, 2):
        (few / f"run{i}.pt.trace.json.gz").write_bytes((run_dir / f"run{i}.pt.trace.json.gz").read_bytes())
    (few / "notes.md").write_text("not a run")
    code, _, err = cli(capsys, "history", few)
    assert code == 2 and "holds 2 runs; history needs at least 3" in err
    (few / "broken.json").write_text("{\"format_version\": 1, \"tool_version\": \"x\"}")
    code, _, err = cli(capsys, "history", few)
    assert code == 2 and "broken.json" in err and "baseline" in err and err.count("\n") == 1


def test_a_gate_selecting_no_key_is_a_usage_error_or_undecided(run_dir, capsys):
    code, _, err = cli(capsys, "history", run_dir, "--fail-on", "op:aten::does_not_exist:+5%", "--require-verdict")
    assert code == 2 and "matches no key of the history" in err
    # an alias whose row no run records (these samples hold no memory rows) is UNDECIDED: exit 3 when required
    h = analyse(_runs([10, 10, 10, 10]), _options("memory.peak_reserved:+5%", require=True))
    assert h.exit_code == 3 and h.gates[0].message == "memory.peak_reserved:+5%: UNDECIDED (no run records memory:peak_reserved)"
    assert analyse(_runs([10, 10, 10, 10]), _options("memory.peak_reserved:+5%")).exit_code == 0


def test_o_dir_alone_writes_files_quiet_and_html(run_dir, tmp_path, capsys, monkeypatch):
    """history at compare's level: -o DIR alone writes the workbook (compare's default), -q keeps
    the headline, the change points and the gates, and --format html writes a page with them."""
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "history", run_dir, "-o", "out", "-q", "--fail-on", "e2e:+5%")
    assert code == 1, err
    assert [p.suffix for p in (tmp_path / "out").iterdir()] == [".xlsx"]
    assert out.startswith("perfcmp history: 6 runs") and "run 4: run4.pt.trace.json.gz" in out
    assert "gate e2e:+5%: FAILED" in out and "E2E per run" not in out and "method:" not in out
    code, _, err = cli(capsys, "history", run_dir, "--format", "html", "-o", "page.xlsx")
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "perfcmp history: " in page
    assert "<td>run4.pt.trace.json.gz</td><td>overall:e2e</td>" in page and "No change point" not in page


def test_runs_that_do_not_compare_are_refused_or_named():
    """A CPU-only run (no kernel keys) among GPU runs, or a run on another GPU model, is refused by
    name (exit 3: a switch of hardware would read as a regression); a run of another model (1 op
    key shared of 3) is warned about by name."""
    from perfcmp.base.errors import NotComparableError

    gpu = {"kernel:sgemm": [1.0, 1.0, 1.0, 1.0]}
    a100 = {"device name": "NVIDIA A100"}
    same = [("r1", "r1", "profile", _samples(10, a100, gpu), ()), ("r2", "r2", "profile", _samples(10, a100, gpu), ())]
    cpu_only = _samples(10, {**a100, "time base": "host ops"})  # what samples.py records for a CPU-only trace
    with pytest.raises(NotComparableError, match=r"device kinds \(CPU: cpu; GPU: r1, r2\)"):
        analyse([*same, ("cpu", "cpu", "profile", cpu_only, ())], _options())
    with pytest.raises(NotComparableError, match=r"device models \(NVIDIA A100: r1, r2; Tesla V100: v100\)"):
        analyse([*same, ("v100", "v100", "profile", _samples(10, {"device name": "Tesla V100"}, gpu), ())], _options())
    other = ("other", "other", "profile", _samples(10, a100, {**gpu, "op:aten::conv2d": [1.0] * 4, "op:aten::relu": [1.0] * 4}), ())
    warnings = analyse([*same, other], _options()).warnings  # runs in natural name order: other, r1, r2
    assert [w for w in warnings if "op keys" in w] == [
        "r1 shares 33% of its op keys with other: another model or code path, so its times are not comparable",
        "r2 shares 33% of its op keys with other: another model or code path, so its times are not comparable"]
