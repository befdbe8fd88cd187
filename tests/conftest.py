"""Shared builders for the reader and CLI tests: tiny literal profiles written into tmp_path.

Every number the tests assert is written here or in the test itself, so a reader's answer can
be checked by hand. Sections below this one may add options and fixtures of their own.
"""

from __future__ import annotations

import gzip
import json
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests judge values, never speed: on a loaded CI machine a 200 ms deadline or hypothesis's
# "input generation is slow" check fails a correct test (both were seen with the suite beside other work).
settings.register_profile("perfcmp", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("perfcmp")

# --- every result any test makes is checked (ComparisonResult.check) -----------------------------


@pytest.fixture(autouse=True)
def _results_are_checked(monkeypatch):
    """Wrap the two places results are made so that ``ComparisonResult.check`` runs on each."""
    check_every_result(monkeypatch)


def check_every_result(monkeypatch) -> None:
    """``_results_are_checked`` for code outside a test (``tests/test_fuzz.py``'s replay)."""
    from perfcmp import golden, pipeline

    for module, name in ((pipeline, "_result"), (golden, "check")):
        made = getattr(module, name)

        def checked(*args, _made=made, **kwargs):
            result = _made(*args, **kwargs)
            result.check()
            return result

        monkeypatch.setattr(module, name, checked)


# --- Ctrl-C reaches the runs the tests start ------------------------------------------------------


def pytest_configure(config):
    """A pytest started with SIGINT ignored (in the background of a non-interactive shell, as some
    CI runners start jobs) would pass that on to every perfcmp it starts, and a run that ignores
    Ctrl-C, rightly, cannot be tested stopping on it: the signal is handled here, so that the
    children start with its default."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _a_stop_stops_the_session(request, monkeypatch):
    """One Ctrl-C (or SIGTERM) stops the whole test run, not just the test it lands in.

    ``perfcmp.cli.main`` turns SIGINT / SIGTERM into exit 130 / 143 with one line, as a command
    must; a test calling ``main`` in-process (the CLI tests, the fuzzer) would see that code,
    fail, and the run would go on to the next test. Here, after ``main`` has cleaned up and
    printed its line, SIGINT becomes the ``KeyboardInterrupt`` that ends a pytest session and
    SIGTERM is delivered again with its default action. Tests that signal themselves on purpose,
    to check that very exit code, carry ``@pytest.mark.signals_self``.
    """
    if request.node.get_closest_marker("signals_self"):
        return
    from perfcmp import cli

    stopped = cli._stopped

    def stop_the_session(signum: int) -> int:
        code = stopped(signum)
        if signum == signal.SIGTERM:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGTERM)
        raise KeyboardInterrupt(f"perfcmp stopped by signal {signum}, exit {code}")

    monkeypatch.setattr(cli, "_stopped", stop_the_session)


# --- the quick selection: `pytest` leaves these to `pytest -m slow` (.ci/run runs both) ------------

# Tests of several seconds each on a quiet 2-core machine, by module and test name: the fuzz and
# property sessions, multi-rank clusters, end-to-end runs repeated to compare their outputs, and the
# further cases of a parametrised end-to-end test (an entry "name[case]" marks that case only; a bare
# name marks every case). Each behaviour they check keeps a quick representative in the quick
# selection (one rank, one export, one seed, one signal). Measured in CPU seconds per test, not wall
# (issue 27: the quick selection 260 -> 175 CPU-s; docs/performance.md, "The fast lane").
SLOW = {
    "test_fuzz.py": {"test_fuzz", "test_fuzz_documents"},  # the short fuzz sessions: 5-75 s a strategy
    "test_html.py": {"test_gpu_to_npu_report_has_no_horizontal_scroll",  # headless-browser screenshots
                     "test_demo_report_in_headless_chromium",
                     "test_same_result_same_bytes"},  # determinism: test_outputs' byte-identical runs
    "test_samples.py": {"test_every_gpu_sample_compares_and_keeps_the_invariants",  # the 35 MB real traces
                        "test_step_sums_are_pandas_groupby_sums",  # a property session (9.7 s)
                        "test_every_applicable_detail_sheet_is_filled[gpu/nccl_data.pt.trace.json.gz-sheets1]",
                        "test_every_applicable_detail_sheet_is_filled[npu/synthetic_full_ascend_pt-sheets3]"},
    "test_align.py": {"test_random_pairs_match_dp", "test_deterministic"},  # random pairs against the DP
    "test_api.py": {"test_profiles_or_paths_give_the_same_result"},
    "test_api_equivalence.py": {"test_cli_api_map_replaces_the_shipped_table"},
    "test_cluster.py": {"test_slow_rank_and_slow_link_are_found", "test_detail_ranks_asked_for_and_the_largest_growth",
                        "test_no_injected_change_reports_nothing", "test_dask_local_cluster_gives_the_same_json",
                        "test_rank_option_keeps_the_one_rank_comparison",
                        "test_a_scheduler_without_workers_is_one_clear_error"},  # 16-rank runs
    "test_detail_sheets.py": {"test_consuming_the_sides_changes_no_sheet_and_frees_the_kernels",
                              "test_kernel_and_memory_sheets_built_aside_are_the_ones_built_here",
                              "test_module_sheets_replace_operator_sheets_when_both_sides_have_modules",
                              "test_doubled_npu_wait_tops_the_communication_sheet"},
    "test_console.py": {"test_render_gives_the_same_workbook_as_compare",
                        "test_every_line_fits_80_and_200_columns_with_the_same_rows[gpu_vs_npu]",
                        "test_every_line_fits_80_and_200_columns_with_the_same_rows[npu]"},
    "test_outputs_reliability.py": {"test_forty_concurrent_runs_in_one_second_each_get_a_whole_set",
                                    # SIGKILL's cases stay quick; a signal while writing: test_signal_while_writing_*
                                    "test_the_read_worker_dies_with_the_run[SIGTERM]",
                                    "test_the_read_worker_dies_with_the_run[Ctrl-C]",
                                    "test_the_second_workbook_writer_dies_with_the_run[SIGTERM]",
                                    "test_the_second_workbook_writer_dies_with_the_run[Ctrl-C]",
                                    "test_sigterm_while_a_real_run_writes_its_files"},
    "test_history.py": {"test_without_gates_the_exit_code_is_0_and_outputs_are_deterministic",
                        "test_baselines_saved_with_golden_save_are_runs_too"},
    "test_side_stats.py": {"test_side_stats_is_pandas_grouping"},
    "test_workbook.py": {"test_rows_written_in_blocks_give_the_same_bytes",
                         "test_a_block_of_rows_is_the_cells_written_one_by_one"},  # equivalences of two writers
    "test_pipeline.py": {"test_one_process_parks_the_first_side_on_disk_and_gets_the_same_result",
                         "test_no_room_for_the_handoff_file_sends_the_side_through_the_pipe"},
    "test_trace_output.py": {"test_chosen_steps_and_default_without_trace"},
    # 20 A/A seeds: seed 0 stays quick; the recorded A/A pair of 3 steps stays quick
    "test_verdict_end_to_end.py": {*(f"test_a_a_is_neutral_with_no_regressed_row[{seed}]" for seed in range(1, 20)),
                                   "test_recorded_a_a_pairs_pass_an_e2e_gate_with_no_regressed_op[base6-aa6]"},
    # one GPU and one NPU mechanism, one setup difference, one side of each injected pair stay quick
    "test_diagnosis_validation.py": {*(f"test_injected_mechanism_ranks_first_with_its_cost[{m}]"
                                       for m in ("dataloader", "extra_casts", "sync_point", "dataloader_npu")),
                                     "test_setup_difference_is_said_first[versions]",
                                     "test_unfused_attention_is_missing_fusion_paired_with_the_fused_kernels[npu]",
                                     "test_fragmentation_says_fragmentation_and_expandable_segments[npu]",
                                     "test_aa_pairs_have_no_finding_above_one_percent[npu]"},
    # real exports: every generation's own step breakdown stays quick (test_each_export_equals_*);
    # the rank-against-rank and text-against-DB comparisons keep one export each
    "test_real_npu_communication.py": {f"test_level0_rank1_against_rank0_is_inside_each_collective_and_adds_up[{e}]"
                                       for e in ("2024 db", "2024 text", "2025 db")},
    "test_real_npu_memory.py": {*(f"test_rank1_against_rank0_shows_no_memory_difference[{e}]"
                                  for e in ("db-real_msinsight_2024_level0", "text-real_msinsight_2024_level0",
                                            "text-real_msinsight_level0")),
                                "test_text_against_db_of_one_job_shows_no_memory_difference[real_msinsight_2024_level0]"},
    "test_real_npu_generations.py": {*(f"test_rank_pairs_check_themselves_without_a_warning[{e}]"
                                       for e in ("real_msinsight_2024_level0-db", "real_msinsight_2024_level0-text",
                                                 "real_msinsight_level0-db")),
                                     "test_text_against_db_of_one_job_pairs_every_kernel_and_api[real_msinsight_2024_level0]"},
    "test_real_npu_cluster.py": {"test_text_against_db_every_group_pairs[real_msinsight_2024_level0]",
                                 "test_2025_group_uncovered_is_the_profilers[db]"},
    "test_real_npu_exports.py": {"test_text_and_db_exports_give_the_same_sheets_and_columns"},  # per kernel: generations
    # one case of each odd value stays quick, and one input of each format
    "test_malformed_inputs.py": {*(f"test_odd_parallel_group_info_in_the_db_meta_data[{c}]"
                                   for c in ("deep", "entry-string", "list", "not-json", "null")),
                                 *(f"test_odd_values_in_profiler_info_and_metadata_are_read_around[{c}]"
                                   for c in ("list", "null", "number", "whole-string")),
                                 *(f"test_leading_whitespace_and_a_bom_are_skipped[{c}]"
                                   for c in ("array-400 whitespace", "array-spaces then bom", "object-64 spaces")),
                                 "test_an_odd_thread_sort_index_sorts_as_a_missing_one[10**400]",
                                 "test_an_odd_thread_sort_index_sorts_as_a_missing_one[1e400]",
                                 "test_db_text_that_is_not_utf8_is_read_with_replacement[blob in STRING_IDS]",
                                 "test_db_text_that_is_not_utf8_is_read_with_replacement[blob in an enum]",
                                 "test_deep_nesting_in_a_side_json_file_ignores_it_with_a_warning[profiler_info_0.json]",
                                 "test_a_time_that_is_not_finite_or_out_of_range_drops_its_event_with_a_warning[dur]",
                                 "test_a_step_number_beyond_int64_is_no_step_npu", "test_a_step_number_beyond_int64_is_no_step_db",
                                 "test_a_timestamp_far_from_the_others_is_dropped_saying_how_much_it_would_stretch",
                                 "test_absurd_memory_sizes_in_a_kineto_trace"},
    # every bad input stays quick as the baseline (-bp); as the profile under test (-d) one does
    "test_cli_errors.py": {f"test_bad_input_is_one_line_exit_2_and_writes_nothing[{c}--d]"
                           for c in ("ascend_pt without trace_view", "corrupt gzip", "empty dir", "empty file", "foreign dir",
                                     "json array of numbers", "json array, not torch_npu", "not a trace", "sqlite",
                                     "truncated gzip", "truncated json", "two traces")},
}


def pytest_collection_modifyitems(config, items):
    """Mark the tests of ``SLOW`` ``slow`` (pyproject's addopts deselects them in a plain `pytest`)."""
    for item in items:
        names = SLOW.get(item.path.name, ())
        if item.name in names or getattr(item, "originalname", item.name) in names:
            item.add_marker(pytest.mark.slow)


# --- profile builders (reader and CLI tests) ---------------------------------------------------

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"


@pytest.fixture
def samples_dir() -> Path:
    """../shared/samples next to the repository; the test is skipped when it is absent."""
    if not SAMPLES.is_dir():
        pytest.skip(f"reference samples not found at {SAMPLES}")
    return SAMPLES


@pytest.fixture
def write_kineto(tmp_path):
    """``write_kineto(events, name="trace.json", **header) -> Path``: a Kineto trace object.

    A name ending ``.gz`` is gzipped; ``name`` may hold sub-directories.
    """

    def write(events: list[dict], name: str = "trace.json", **header) -> Path:
        doc = {"schemaVersion": 1, **header, "traceEvents": events}
        data = json.dumps(doc).encode()
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        return path

    return write


@pytest.fixture
def small_gpu_trace(write_kineto):
    """``small_gpu_trace(name, kernel_us=10) -> Path``: steps 1 and 2 of 100 µs, each with one
    aten::mm launching one kernel of ``kernel_us`` (linked by correlation id = step id)."""

    def make(name: str = "base.pt.trace.json", kernel_us: float = 10.0) -> Path:
        events = []
        for i, step in enumerate((1, 2)):
            t0 = 1_700_000_000_000_000 + 100 * i
            events += [
                {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1, "ts": t0, "dur": 100},
                {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 10, "dur": 20},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t0 + 15, "dur": 5,
                 "args": {"correlation": step}},
                {"ph": "X", "cat": "kernel", "name": "sm80_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7, "ts": t0 + 30,
                 "dur": kernel_us, "args": {"stream": 7, "correlation": step}},
            ]
        return write_kineto(events, name)

    return make


# The literal torch_npu export built by ``ascend_pt``. Times are µs after T = 1731900000000000,
# the earliest event (ProfilerStep#5): "1731900000000020.125" is 20.125 in the model.
#
#   Python (pid 100, tid 1)   ProfilerStep#5 [0, 1000)  > aten::mm [10, 30.5), aten::add_ [40, 50),
#                                                         c10d::allreduce_ [60, 75)
#                             ProfilerStep#6 [1000, 1500) > aten::zero_ [1010, 1015)
#   Ascend Hardware (pid 300, stream 2), in file order:
#     0 aclnnMm_MatMulCommon_MatMulV2               20.125 +100.25   flow from 12.25 (in aten::mm)
#     1 aclnnAdd_AddAiCore_Add                      130    +10       flow from 41.5 (in aten::add_)
#     2 MEMCPY_ASYNC                                200    +4        no flow
#     3 EVENT_WAIT_SQE                              210    +2        no flow
#     4 aclnnInplaceZero_ZerosLikeAiCore_ZerosLike  1020   +6        flow from 1011 (in aten::zero_)
#   HCCL (pid 400): "Group 123 Communication" (tid 0): hcom_allReduce__123_0_1 300 +50.5, flow from
#     61 (in c10d::allreduce_); "Plane 0" (tid 1): Notify_Wait 300 +20, Memcpy 320 +30.5;
#     "Plane 1" (tid 2): Reduce_Inline 301 +10
#   Overlap Analysis (pid 500): Computing 20.125 +100.25, Free 120.375 +9.625, Computing 130 +10,
#     Communication 300 +50.5, Communication(Not Overlapped) 300 +50.5, Computing 1020 +6
#   CANN (pid 200): AscendCL@aclnnMm 13 +3 (a runtime host row on its own pid)
#
# kernel_details.csv rows: a decoy with aclnnMm's start but another name; aclnnMm (MatMulV2,
# shapes 8192,512;512,512, aic_mac 80.5, aic_mte2 90, aiv 0); aclnnAdd (Add, 4096;4096, aic 0,
# aiv 8.5); a ZerosLike row 1 ns after the trace task (1020.001: must not join); the HCCL op (N/A).
# memory_record.csv: APP and GE rows (ignored) around PTA rows at 10.5 (1.5 / 4 MB) and
# 20.25 (2.25 / 4 MB). profiler_metadata.json names HCCL group 123 "dp".

def _ts(rel: str) -> str:
    """Relative µs "20.125" -> "1731900000000020.125", a timestamp as torch_npu writes it."""
    whole, _, frac = rel.partition(".")
    return f"{1731900000000000 + int(whole)}.{(frac + '000')[:3]}"


def _npu_trace() -> list[dict]:
    meta = [
        (100, 0, "process_name", "Python"), (100, 1, "thread_name", "Thread 1"),
        (200, 0, "process_name", "CANN"), (200, 1, "thread_name", "Thread 1"),
        (300, 0, "process_name", "Ascend Hardware"), (300, 2, "thread_name", "Stream 2"),
        (400, 0, "process_name", "HCCL"), (400, 0, "thread_name", "Group 123 Communication"),
        (400, 1, "thread_name", "Plane 0"), (400, 2, "thread_name", "Plane 1"),
        (500, 0, "process_name", "Overlap Analysis"), (500, 0, "thread_name", "Computing"),
        (500, 1, "thread_name", "Communication"), (500, 2, "thread_name", "Communication(Not Overlapped)"),
        (500, 3, "thread_name", "Free"),
    ]
    events: list[dict] = [{"ph": "M", "name": n, "pid": p, "tid": t, "args": {"name": v}} for p, t, n, v in meta]
    events += [{"ph": "M", "name": "thread_sort_index", "pid": 400, "tid": t, "args": {"sort_index": t}} for t in (0, 1, 2)]

    def op(name, rel, dur, **args):
        return {"ph": "X", "name": name, "pid": 100, "tid": 1, "ts": _ts(rel), "dur": dur, "cat": "cpu_op",
                "args": {"Sequence number": -1, "Fwd thread id": 0, **args}}

    def task(pid, tid, name, rel, dur, **args):
        return {"name": name, "pid": pid, "tid": tid, "ts": _ts(rel), "dur": dur, "ph": "X", "args": args}

    def flow(rel_from, pid, tid, rel_to):
        fid = int(_ts(rel_to).replace(".", ""))  # torch_npu ids are the target start in ns
        return [{"ph": "s", "bp": "e", "name": "torch_to_npu", "id": fid, "pid": 100, "tid": 1, "ts": _ts(rel_from), "cat": "async_npu"},
                {"ph": "f", "bp": "e", "name": "torch_to_npu", "id": fid, "pid": pid, "tid": tid, "ts": _ts(rel_to), "cat": "async_npu"}]

    events += [
        op("ProfilerStep#5", "0", 1000.0),
        op("aten::mm", "10", 20.5, **{"Input Dims": [[8192, 512], [512, 512]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}),
        {"ph": "X", "name": "Enqueue@aclnnMm", "pid": 100, "tid": 1, "ts": _ts("12"), "dur": 1.0, "cat": "enqueue",
         "args": {"correlation_id": 7}},
        op("aten::add_", "40", 10.0),
        op("c10d::allreduce_", "60", 15.0),
        op("ProfilerStep#6", "1000", 500.0),
        op("aten::zero_", "1010", 5.0),
        task(200, 1, "AscendCL@aclnnMm", "13", 3.0, Mode="ACL_NN"),
        {"name": "HostToDevice1", "ph": "s", "cat": "HostToDevice", "id": "1", "pid": 200, "tid": 1, "ts": _ts("14")},
        task(300, 2, "aclnnMm_MatMulCommon_MatMulV2", "20.125", 100.25, **{"Task Type": "Other", "Stream Id": 2, "Task Id": 11}),
        {"name": "HostToDevice1", "ph": "f", "cat": "HostToDevice", "id": "1", "pid": 300, "tid": 2, "ts": _ts("20.125"), "bp": "e"},
        task(300, 2, "aclnnAdd_AddAiCore_Add", "130", 10.0, **{"Task Type": "AI_VECTOR_CORE", "Stream Id": 2, "Task Id": 12}),
        task(300, 2, "MEMCPY_ASYNC", "200", 4.0, **{"Task Type": "Other", "Stream Id": 2, "Task Id": 13}),
        task(300, 2, "EVENT_WAIT_SQE", "210", 2.0, **{"Task Type": "EVENT_WAIT_SQE", "Stream Id": 2, "Task Id": 14}),
        task(300, 2, "aclnnInplaceZero_ZerosLikeAiCore_ZerosLike", "1020", 6.0,
             **{"Task Type": "AI_VECTOR_CORE", "Stream Id": 2, "Task Id": 15}),
        task(400, 0, "hcom_allReduce__123_0_1", "300", 50.5, **{"connection_id": 9, "alg_type": "RING", "count": 1024}),
        task(400, 1, "Notify_Wait", "300", 20.0, **{"task type": "Notify Wait", "transport type": "SDMA"}),
        task(400, 1, "Memcpy", "320", 30.5, **{"task type": "Memcpy", "transport type": "SDMA"}),
        task(400, 2, "Reduce_Inline", "301", 10.0, **{"task type": "Reduce Inline", "transport type": "RDMA"}),
        task(500, 0, "Computing", "20.125", 100.25),
        task(500, 3, "Free", "120.375", 9.625),
        task(500, 0, "Computing", "130", 10.0),
        task(500, 1, "Communication", "300", 50.5),
        task(500, 2, "Communication(Not Overlapped)", "300", 50.5),
        task(500, 0, "Computing", "1020", 6.0),
    ]
    events += flow("12.25", 300, 2, "20.125") + flow("41.5", 300, 2, "130") + flow("61", 400, 0, "300") + flow("1011", 300, 2, "1020")
    return events


KERNEL_HEADERS = {
    # torch_npu >= 2.1 with aic_metrics=PipeUtilization
    "new": "Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),"
           "Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,Input Data Types,Input Formats,"
           "Output Shapes,Output Data Types,Output Formats,Context ID,aicore_time(us),aic_total_cycles,"
           "aic_mac_time(us),aic_mac_ratio,aic_scalar_time(us),aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,"
           "aic_mte2_time(us),aic_mte2_ratio,aic_fixpipe_time(us),aic_fixpipe_ratio,aic_icache_miss_rate,aiv_time(us),"
           "aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,aiv_mte2_time(us),"
           "aiv_mte2_ratio,aiv_mte3_time(us),aiv_mte3_ratio,aiv_icache_miss_rate,cube_utilization(%)",
    # older CANN: only aicore_time / aiv_time, start times not quoted
    "legacy": "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),"
              "Block Dim,Mix Block Dim,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,"
              "Output Formats,Context ID,aicore_time(us),aic_total_cycles,aic_mac_fp16_ratio,aic_mac_int8_ratio,"
              "aic_cube_fops,aic_vector_fops,aiv_time(us),aiv_total_cycles,aiv_vec_fp32_ratio,aiv_vec_fp16_ratio,"
              "aiv_vec_int32_ratio,aiv_vec_misc_ratio,aiv_cube_fops,aiv_vector_fops",
    # no PMU columns (aic_metrics off)
    "no_pmu": "Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),"
              "Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,Input Data Types,Input Formats,"
              "Output Shapes,Output Data Types,Output Formats,Context ID",
    # cut after Accelerator Core: no start times, nothing can be joined
    "core_only": "Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core",
}

# Cells by column; missing ones take the row's "*" default.
KERNEL_ROWS = [
    {"*": "0", "Step Id": "5", "Name": "aclnnOther_Other_Other", "Type": "Other", "Accelerator Core": "AI_CORE",
     "Start Time(us)": "20.125", "Duration(us)": "1.0", "Input Shapes": "1"},
    {"*": "0", "Step Id": "5", "Model ID": "4294967295", "Task ID": "11", "Stream ID": "2",
     "Name": "aclnnMm_MatMulCommon_MatMulV2", "Type": "MatMulV2", "OP State": "dynamic", "Accelerator Core": "AI_CORE",
     "Start Time(us)": "20.125", "Duration(us)": "100.25", "Block Dim": "20", "HF32 Eligible": "NO",
     "Input Shapes": "8192,512;512,512", "Input Data Types": "DT_BF16;DT_BF16", "Input Formats": "ND;ND",
     "Output Shapes": "8192,512", "Output Data Types": "DT_BF16", "Output Formats": "ND", "Context ID": "N/A",
     "aicore_time(us)": "95.0", "aic_mac_time(us)": "80.5", "aic_mte2_time(us)": "90.0", "aiv_time(us)": "0"},
    {"*": "0", "Step Id": "5", "Model ID": "4294967295", "Task ID": "12", "Stream ID": "2",
     "Name": "aclnnAdd_AddAiCore_Add", "Type": "Add", "OP State": "dynamic", "Accelerator Core": "AI_VECTOR_CORE",
     "Start Time(us)": "130", "Duration(us)": "10.0", "Block Dim": "40", "HF32 Eligible": "NO",
     "Input Shapes": "4096;4096", "Input Data Types": "FLOAT;FLOAT", "Input Formats": "ND;ND",
     "Output Shapes": "4096", "Output Data Types": "FLOAT", "Output Formats": "ND", "Context ID": "N/A",
     "aiv_time(us)": "8.5", "aiv_vec_time(us)": "6.0"},
    {"*": "0", "Step Id": "6", "Model ID": "4294967295", "Task ID": "15", "Stream ID": "2",
     "Name": "aclnnInplaceZero_ZerosLikeAiCore_ZerosLike", "Type": "ZerosLikeDecoy", "Accelerator Core": "AI_VECTOR_CORE",
     "Start Time(us)": "1020.001", "Duration(us)": "6.0", "Input Shapes": "33554432", "Context ID": "N/A"},
    {"*": "N/A", "Step Id": "5", "Model ID": "4294967295", "Name": "hcom_allReduce__123_0_1", "Type": "hcom_allReduce_",
     "Accelerator Core": "HCCL", "Start Time(us)": "300", "Duration(us)": "50.5", "Wait Time(us)": "0"},
]


def kernel_details_csv(variant: str) -> str:
    """kernel_details.csv text as torch_npu writes it (``variant`` is a KERNEL_HEADERS key)."""
    header = KERNEL_HEADERS[variant].split(",")
    lines = [",".join(header)]
    for row in KERNEL_ROWS:
        cells = []
        for col in header:
            value = row.get(col, row["*"])
            if col == "Start Time(us)":
                value = _ts(value)
                value = value if variant == "legacy" else f'"{value}\t"'
            elif col in ("Input Shapes", "Output Shapes") and value != "N/A":
                value = f'"""{value}"""'
            cells.append(value)
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


MEMORY_RECORD = (
    "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type\n"
    f"APP,{_ts('5')}\t,3000.0,4000.0,3000.0,,NPU:0\n"
    f"PTA,{_ts('10.5')}\t,1.5,4.0,1.5,187651324469440,NPU:0\n"
    f"GE,{_ts('11')}\t,7.0,8.0,7.0,,NPU:0\n"
    f"PTA,{_ts('20.25')}\t,2.25,4.0,2.25,187651324469440,NPU:0\n"
)
PROFILER_INFO = {"config": {"common_config": {"record_shapes": True}, "experimental_config": {"_profiler_level": "Level1"}},
                 "torch_npu_version": "2.1.0.post8", "cann_version": "8.0.RC2", "rank_id": 3}
PROFILER_METADATA = {"ENV_VARIABLES": {"HCCL_BUFFSIZE": "200"},
                     "parallel_group_info": {"123": {"group_name": "dp", "group_rank": 0, "global_ranks": [0, 1]}}}


@pytest.fixture
def npu_trace_events() -> list[dict]:
    """A fresh copy of the literal trace_view.json events above, for tests that alter them."""
    return _npu_trace()


@pytest.fixture
def ascend_pt(tmp_path):
    """``ascend_pt(name="x_ascend_pt", kernels="new", omit=(), events=None) -> Path`` of the
    literal export above.

    ``kernels`` picks the kernel_details.csv header (a KERNEL_HEADERS key); ``omit`` names files
    to leave out (kernel_details.csv, memory_record.csv, profiler_info_0.json, profiler_metadata.json);
    ``events`` replaces the trace_view.json events.
    """

    def build(name: str = "x_ascend_pt", kernels: str = "new", omit: tuple[str, ...] = (),
              events: list[dict] | None = None) -> Path:
        root = tmp_path / name
        out = root / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        files = {
            out / "trace_view.json": json.dumps(_npu_trace() if events is None else events),
            out / "kernel_details.csv": kernel_details_csv(kernels),
            out / "memory_record.csv": MEMORY_RECORD,
            root / "profiler_info_0.json": json.dumps(PROFILER_INFO),
            root / "profiler_metadata.json": json.dumps(PROFILER_METADATA),
        }
        for path, text in files.items():
            if path.name not in omit:
                path.write_text(text, encoding="utf-8")
        return root

    return build


# --- golden cases ------------------------------------------------------------------------------


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the expected files of golden/cases instead of comparing with them")
