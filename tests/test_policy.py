"""Gate policy: parsing ``--fail-on`` expressions and policy files, evaluating gates against
literal verdicts, and the exit codes. Every number is written here, so each case is checkable
by hand: times in µs, memory in bytes, ``relative`` = diff / base median."""

from __future__ import annotations

import pytest

from perfcmp.options import Gate, Policy
from perfcmp.policy import evaluate, exit_code, load_policy, parse_gate
from perfcmp.base.errors import UsageError
from perfcmp.results.pair import GateResult, Verdict, VerdictRow

MB = 1024.0 ** 2


def row(name: str, verdict: str = "regressed", base: float = 100_000.0, diff: float = 0.0,
        n1: bool = False) -> VerdictRow:
    """A row with medians ``base`` and ``base + diff`` (µs, or bytes for memory rows)."""
    dimension, _, key = name.partition(":")
    return VerdictRow(row=name, dimension=dimension, key=key, unit="bytes" if dimension == "memory" else "us",
                      n_base=10, n_comp=10, base_median=base, comp_median=base + diff, diff=diff,
                      relative=diff / base if base else None, verdict=verdict, n1=n1)


def verdict(*rows: VerdictRow, overall: str = "neutral", comparable: bool = True) -> Verdict:
    return Verdict(overall=overall, comparable=comparable, rows=list(rows))


def gate_result(expression: str, *rows: VerdictRow) -> GateResult:
    [result] = evaluate(Policy(gates=(parse_gate(expression),)), verdict(*rows))
    return result


# --- parsing -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("e2e:+3%", Gate("e2e:+3%", ("overall:e2e",), None, 0.03, None)),
    ("communication:+5%&+2ms", Gate("communication:+5%&+2ms", ("overall:comm",), None, 0.05, 2000.0)),
    ("op:aten::matmul:+10%", Gate("op:aten::matmul:+10%", None, "op:aten::matmul", 0.10, None)),
    ("memory.peak_allocated:+2%", Gate("memory.peak_allocated:+2%", ("memory:peak_allocated",), None, 0.02, None)),
])
def test_issue_examples_parse(text, expected):
    assert parse_gate(text) == expected


@pytest.mark.parametrize("text, rows, pattern", [
    ("computing:+1%", ("overall:computing",), None),
    ("comm:+1%", ("overall:comm",), None),
    ("free:+1%", ("overall:free",), None),
    ("memory.peak_reserved:+1%", ("memory:peak_reserved",), None),
    ("E2E:+1%", ("overall:e2e",), None),
    ("op:aten::*:+1%", None, "op:aten::*"),
    ("kernel:MatMul:+1%", None, "kernel:MatMul"),
    ("comm:allreduce:+1%", None, "comm:allreduce"),
    ("overall:computing.matmul*:+1%", None, "overall:computing.matmul*"),
    ("overall:comm.group:tp.wait:+1%", None, "overall:comm.group:tp.wait"),
    ("memory:peak_*:+1%", None, "memory:peak_*"),
])
def test_selectors(text, rows, pattern):
    gate = parse_gate(text)
    assert (gate.rows, gate.pattern) == (rows, pattern)


@pytest.mark.parametrize("text, relative, absolute", [
    ("e2e:+250us", None, 250.0),
    ("e2e:+250µs", None, 250.0),
    ("e2e:+1.5ms", None, 1500.0),
    ("e2e:+2s", None, 2_000_000.0),
    ("e2e:+0.5%", 0.005, None),
    ("e2e:+2ms&+5%", 0.05, 2000.0),
    (" e2e : +3 % & +1 ms ", 0.03, 1000.0),
    ("memory.peak_allocated:+512MB", None, 512 * MB),
    ("memory.peak_allocated:+1GB", None, 1024 * MB),
    ("memory.peak_reserved:+100KB", None, 102_400.0),
    ("memory.peak_reserved:+64B&+1%", 0.01, 64.0),
])
def test_limits_and_units(text, relative, absolute):
    gate = parse_gate(text)
    assert gate.relative == pytest.approx(relative) if relative is not None else gate.relative is None
    assert gate.absolute == pytest.approx(absolute) if absolute is not None else gate.absolute is None


def test_expression_kept_as_written():
    assert parse_gate("  op:aten::mm:+10%  ").expression == "op:aten::mm:+10%"


@pytest.mark.parametrize("text, hint", [
    ("e2e", "missing limit"),
    ("e2e:3%", "must start with '+'"),
    ("e2e:-3%", "increase"),
    ("e2e:+3", "needs a unit"),
    ("e2e:+x%", "not a number"),
    ("op:", "missing limit"),
    ("op:+3%", "needs a key pattern"),
    ("kernel::+3%", "needs a key pattern"),
    (":+3%", "missing selector"),
    ("", "empty"),
    ("e2e2:+3%", "unknown selector"),
    ("e2e:+3parsecs", "unknown unit"),
    ("e2e:+3%&+4%", "two relative"),
    ("e2e:+3ms&+4ms", "two absolute"),
    ("e2e:+3%&+4ms&+1s", "at most two"),
    ("e2e:+3%&", "empty limit"),
    ("e2e:+3MB", "selects time rows"),
    ("memory.peak_allocated:+2ms", "selects memory rows"),
])
def test_bad_expressions(text, hint):
    with pytest.raises(UsageError) as caught:
        parse_gate(text)
    message = str(caught.value)
    assert hint in message
    assert "\n" not in message
    assert repr(text.strip()) in message  # names the expression


# --- evaluation ----------------------------------------------------------------------------------


def test_regressed_beyond_limit_fails():
    result = gate_result("e2e:+3%", row("overall:e2e", base=129_000.0, diff=6_200.0))
    assert result.failed and result.rows == ["overall:e2e"]
    assert result.message == "e2e:+3%: FAILED — overall:e2e +4.8 % (+6.2 ms per step, regressed)"


def test_regressed_below_limit_passes():
    result = gate_result("e2e:+3%", row("overall:e2e", diff=2_000.0))  # +2 %
    assert not result.failed and result.rows == []
    assert result.message == "e2e:+3%: passed (overall:e2e +2.0 %, +2.0 ms per step, regressed)"


def test_exactly_at_limit_passes():
    assert not gate_result("e2e:+2ms", row("overall:e2e", diff=2_000.0)).failed


@pytest.mark.parametrize("label", ["unchanged", "within noise", "improved", "base only", "comparison only",
                                   "not comparable"])
def test_only_regressed_rows_fail(label):
    result = gate_result("e2e:+3%", row("overall:e2e", verdict=label, diff=50_000.0))  # +50 %
    assert not result.failed
    assert label in result.message


def test_single_step_regressions_count():
    result = gate_result("e2e:+3%", row("overall:e2e", diff=10_000.0, n1=True))
    assert result.failed
    assert "regressed, n=1" in result.message


@pytest.mark.parametrize("diff, failed", [
    (6_000.0, True),    # +6 % and +6 ms: both limits exceeded
    (3_000.0, False),   # +3 %: beyond 2 ms but not beyond 5 %
])
def test_and_needs_both_limits(diff, failed):
    assert gate_result("communication:+5%&+2ms", row("overall:comm", diff=diff)).failed is failed


def test_and_relative_beyond_absolute_below():
    # base 10 ms, +1.5 ms = +15 %: beyond 5 % but not beyond 2 ms
    assert not gate_result("communication:+5%&+2ms", row("overall:comm", base=10_000.0, diff=1_500.0)).failed
    assert gate_result("communication:+5%&+1ms", row("overall:comm", base=10_000.0, diff=1_500.0)).failed


@pytest.mark.parametrize("expression, failed", [
    ("e2e:+400us", True),
    ("e2e:+500us", False),
    ("e2e:+0.4ms", True),
    ("e2e:+1ms", False),
])
def test_absolute_time_limits(expression, failed):
    assert gate_result(expression, row("overall:e2e", diff=450.0)).failed is failed


def test_pattern_over_op_rows():
    rows = [row("op:aten::matmul", base=10_000.0, diff=1_500.0),   # +15 %: fails
            row("op:aten::add", base=10_000.0, diff=500.0),       # +5 %: below
            row("op:aten::mul", verdict="unchanged", base=10_000.0, diff=2_000.0),
            row("op:aten::linear", base=10_000.0, diff=3_000.0),  # +30 %: fails, listed first
            row("kernel:aten::conv", base=10_000.0, diff=9_000.0),  # other dimension
            row("op:npu::conv", base=10_000.0, diff=9_000.0)]       # outside the pattern
    result = gate_result("op:aten::*:+10%", *rows)
    assert result.failed
    assert result.rows == ["op:aten::linear", "op:aten::matmul"]
    assert result.message == ("op:aten::*:+10%: FAILED — op:aten::linear +30.0 % (+3.0 ms per step, regressed); "
                              "op:aten::matmul +15.0 % (+1.5 ms per step, regressed)")


def test_exact_op_key_with_colons():
    rows = [row("op:aten::matmul", verdict="unchanged", base=10_000.0, diff=210.0),
            row("op:aten::matmul_backward", base=10_000.0, diff=5_000.0)]
    result = gate_result("op:aten::matmul:+10%", *rows)
    assert not result.failed
    assert result.message == "op:aten::matmul:+10%: passed (op:aten::matmul +2.1 %, +210.0 µs per step, unchanged)"


def test_exact_key_with_brackets_matches_itself():
    name = "kernel:void gemm<float>[128]"
    assert gate_result(f"{name}:+1%", row(name, base=1_000.0, diff=500.0)).failed


def test_many_failing_rows_are_summarised():
    rows = [row(f"kernel:k{i}", base=1_000.0, diff=100.0 * (i + 2)) for i in range(5)]
    result = gate_result("kernel:*:+10%", *rows)
    assert result.failed and len(result.rows) == 5
    assert result.message.endswith("; and 2 more")
    assert "\n" not in result.message


def test_passing_pattern_names_the_closest_row():
    rows = [row("op:aten::add", verdict="unchanged", base=1_000.0, diff=300.0),
            row("op:aten::mm", base=1_000.0, diff=50.0)]
    result = gate_result("op:aten::*:+10%", *rows)
    assert not result.failed
    assert result.message == "op:aten::*:+10%: passed (2 rows, closest op:aten::mm +5.0 %, +50.0 µs per step, regressed)"


def test_memory_units():
    peak = row("memory:peak_allocated", base=8 * 1024 * MB, diff=600 * MB)  # +600 MB of 8 GB: +7.3 %
    assert gate_result("memory.peak_allocated:+512MB", peak).failed
    assert not gate_result("memory.peak_allocated:+1GB", peak).failed
    assert gate_result("memory.peak_allocated:+2%", peak).failed
    assert not gate_result("memory.peak_allocated:+10%&+512MB", peak).failed
    assert gate_result("memory.peak_allocated:+599MiB", peak).failed  # the spelling the reports print
    assert not gate_result("memory.peak_allocated:+0.6GiB", peak).failed  # 614.4 MiB
    message = gate_result("memory.peak_allocated:+512MB", peak).message
    assert message == "memory.peak_allocated:+512MB: FAILED — memory:peak_allocated +7.3 % (+600.0 MiB, regressed)"


def test_zero_base_counts_as_infinite_increase():
    new = VerdictRow(row="comm:allgather", dimension="comm", key="allgather", unit="us", n_base=4, n_comp=4,
                     base_median=0.0, comp_median=3_000.0, diff=3_000.0, relative=None, verdict="regressed")
    result = gate_result("comm:allgather:+50%", new)
    assert result.failed
    assert "comm:allgather new (+3.0 ms per step, regressed)" in result.message
    assert not gate_result("comm:allgather:+50%&+5ms", new).failed


def test_selector_matching_no_row_is_a_usage_error_naming_close_rows():
    with pytest.raises(UsageError) as caught:
        gate_result("op:aten::mn:+10%", row("op:aten::mm", diff=90_000.0), row("op:aten::add", diff=0.0))
    assert caught.value.message == ("gate 'op:aten::mn:+10%': the selector 'op:aten::mn' matches no row; "
                                    "did you mean op:aten::mm, op:aten::add?")
    # an alias whose row is absent (nothing recorded) cannot pass silently: UNDECIDED
    result = gate_result("comm:+5%")
    assert result.undecided and not result.failed
    assert result.message == "comm:+5%: UNDECIDED — no row overall:comm (not recorded in this pair)"


def test_within_noise_beyond_the_limit_is_undecided_and_exits_3_when_required():
    # free +10.8 % under free:+10 %, not significant: never a silent pass
    noisy = row("overall:free", verdict="within noise", diff=10_800.0)  # base 100 ms -> +10.8 %
    policy = Policy(gates=(parse_gate("free:+10%"),), require_verdict=True)
    [result] = evaluate(policy, verdict(noisy))
    assert result.undecided and not result.failed and result.rows == ["overall:free"]
    assert result.message.startswith("free:+10%: UNDECIDED — overall:free +10.8 %")
    assert exit_code(policy, verdict(noisy), [result]) == 3
    assert exit_code(Policy(gates=policy.gates), verdict(noisy), [result]) == 0
    # within the limit it passes: +9.9 %
    assert not gate_result("free:+10%", row("overall:free", verdict="within noise", diff=9_900.0)).undecided


def test_not_comparable_pair_makes_every_gate_undecided():
    v = Verdict(overall="inconclusive", comparable=False, reasons=["not comparable: the base has no steps"], rows=[])
    policy = Policy(gates=(parse_gate("e2e:+3%"), parse_gate("op:aten::*:+5%")), require_verdict=True)
    results = evaluate(policy, v)
    assert [r.undecided for r in results] == [True, True] and not any(r.failed for r in results)
    assert results[0].message == "e2e:+3%: UNDECIDED — the pair cannot be evaluated (the base has no steps)"
    assert exit_code(policy, v, results) == 3


def test_evaluate_keeps_policy_order():
    policy = Policy(gates=(parse_gate("free:+1%"), parse_gate("e2e:+1%")))
    results = evaluate(policy, verdict(row("overall:e2e", diff=5_000.0)))
    assert [(r.expression, r.failed) for r in results] == [("free:+1%", False), ("e2e:+1%", True)]


# --- exit codes ----------------------------------------------------------------------------------


def _exit(policy: Policy, judged: Verdict) -> int:
    return exit_code(policy, judged, evaluate(policy, judged))


def test_exit_codes():
    gates = (parse_gate("e2e:+3%"),)
    regressed = verdict(row("overall:e2e", diff=10_000.0), overall="regression")
    fine = verdict(row("overall:e2e", diff=1_000.0), overall="regression")
    inconclusive = verdict(row("overall:e2e", diff=1_000.0), overall="inconclusive")
    not_comparable = verdict(comparable=False, overall="inconclusive")
    assert _exit(Policy(gates=gates), regressed) == 1
    assert _exit(Policy(gates=gates), fine) == 0
    assert _exit(Policy(), regressed) == 0  # no gates: nothing to fail
    assert _exit(Policy(gates=gates), inconclusive) == 0
    assert _exit(Policy(gates=gates, require_verdict=True), inconclusive) == 3
    assert _exit(Policy(require_verdict=True), not_comparable) == 3
    assert _exit(Policy(require_verdict=True), verdict(comparable=False, overall="neutral")) == 3
    assert _exit(Policy(require_verdict=True), fine) == 0
    assert _exit(Policy(gates=gates, require_verdict=True),
                 verdict(row("overall:e2e", diff=10_000.0), overall="inconclusive")) == 1  # a failed gate wins


# --- policy files --------------------------------------------------------------------------------


def write(tmp_path, text: str) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_load_policy_merges_file_and_command_line(tmp_path):
    path = write(tmp_path, """
fail_on = ["e2e:+3%", "communication:+5%&+2ms"]
require_verdict = true

[thresholds]
relative = 0.02
absolute_us = 50
alpha = 0.01
correction = "holm"
""")
    policy = load_policy(path, ["op:aten::matmul:+10%", "e2e:+3%"])
    assert [g.expression for g in policy.gates] == ["e2e:+3%", "communication:+5%&+2ms", "op:aten::matmul:+10%"]
    assert policy.require_verdict is True
    assert policy.thresholds == {"relative": 0.02, "absolute_us": 50.0, "alpha": 0.01, "correction": "holm"}
    assert isinstance(policy.thresholds["absolute_us"], float)


def test_load_policy_without_file():
    assert load_policy(None, []) == Policy()
    policy = load_policy(None, ["e2e:+3%"], require_verdict=True)
    assert policy == Policy(gates=(parse_gate("e2e:+3%"),), require_verdict=True)


def test_flag_or_file_requires_verdict(tmp_path):
    path = write(tmp_path, "require_verdict = false\n")
    assert load_policy(path, [], require_verdict=True).require_verdict is True
    assert load_policy(path, []).require_verdict is False


def test_bad_command_line_gate():
    with pytest.raises(UsageError, match=r"--fail-on: bad gate 'e2e:3%'"):
        load_policy(None, ["e2e:3%"])


@pytest.mark.parametrize("text, hint", [
    ("fail_on = [\"e2e:+3%\"\n", "not valid TOML"),
    ("fail-on = [\"e2e:+3%\"]\n", "unknown key 'fail-on'"),
    ("fail_on = [3]\n", "fail_on must be a list"),
    ("fail_on = [\"e2e\"]\n", "fail_on[0]: bad gate 'e2e'"),
    ("require_verdict = \"yes\"\n", "require_verdict must be true or false"),
    ("thresholds = 3\n", "thresholds must be a table"),
    ("[thresholds]\nrelativ = 0.1\n", "unknown threshold 'relativ'"),
    ("[thresholds]\nrelative = \"5%\"\n", "thresholds.relative must be a non-negative number"),
    ("[thresholds]\nabsolute_us = -1\n", "thresholds.absolute_us must be a non-negative number"),
    ("[thresholds]\nalpha = true\n", "thresholds.alpha must be a non-negative number"),
    ("[thresholds]\nalpha = 1.5\n", "alpha must be between 0 and 1"),
    ("[thresholds]\nshare_of_step = 2\n", "share_of_step is a fraction"),
    ("[thresholds]\ncorrection = 1\n", "thresholds.correction must be a non-empty string"),
    ("[thresholds]\ncorrection = \"bonferroni\"\n", "correction must be 'holm' or 'bh', not 'bonferroni'"),
])
def test_bad_policy_files_name_the_file(tmp_path, text, hint):
    path = write(tmp_path, text)
    with pytest.raises(UsageError) as caught:
        load_policy(path, [])
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path}: ")
    assert hint in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_policy_file(tmp_path):
    path = str(tmp_path / "absent.toml")
    with pytest.raises(UsageError) as caught:
        load_policy(path, [])
    assert caught.value.path == path
    assert "cannot read policy file" in str(caught.value)


def test_policy_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_bytes(b"fail_on = [\"\xff\"]\n")
    with pytest.raises(UsageError) as caught:
        load_policy(str(path), [])
    assert caught.value.path == str(path)


def test_an_inconclusive_row_beyond_the_limit_makes_the_gate_undecided():
    thin = row("overall:e2e", "inconclusive", diff=14_000.0)  # +14 %, every step slower, too few steps
    thin.note = "profile ≥ 4 steps a side"
    result = gate_result("e2e:+5%", thin)
    assert not result.failed and result.undecided and result.rows == ["overall:e2e"]
    assert result.message.startswith("e2e:+5%: UNDECIDED — overall:e2e +14.0 %") and "≥ 4 steps" in result.message
    # below the limit it simply passes
    assert not gate_result("e2e:+20%", thin).undecided
    # never silent: exit 3 when a verdict is required, 0 otherwise
    lax, strict = Policy(gates=(parse_gate("e2e:+5%"),)), Policy(gates=(parse_gate("e2e:+5%"),), require_verdict=True)
    judged = verdict(thin, overall="inconclusive")
    assert exit_code(lax, judged, evaluate(lax, judged)) == 0
    assert exit_code(strict, judged, evaluate(strict, judged)) == 3
    # an improvement is never undecided
    assert not gate_result("e2e:+5%", row("overall:e2e", "inconclusive", diff=-14_000.0)).undecided


def test_the_gates_select_the_verdicts_pre_registered_family():
    from perfcmp.policy import selects

    chosen = selects(Policy(gates=(parse_gate("op:aten::*:+10%"), parse_gate("e2e:+3%"))))
    assert chosen("op:aten::mm") and chosen("overall:e2e") and not chosen("kernel:gemm")
