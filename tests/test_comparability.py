"""What was compared and whether it is like for like (perfcmp.comparability), on hand-built sides."""

from __future__ import annotations

import pytest

from perfcmp.comparability import assess, op_overlap, sheet_overlap, side_facts
from perfcmp.results.pair import SideSummary, Table, Verdict, VerdictRow


def side(source="a.pt.trace.json.gz", device="GPU", name="NVIDIA A100-SXM4-80GB", basis="device", steps=(1, 2, 3),
         **metadata) -> SideSummary:
    producer = "PyTorch profiler (Kineto)" if device == "GPU" else "Ascend PyTorch profiler (torch_npu)"
    return SideSummary(source=source, device=device, producer=producer, device_name=name, rank=0,
                       metadata={k.replace("_", " "): v for k, v in metadata.items()}, steps=list(steps), basis=basis)


def op(key: str, base: float | None, comp: float | None) -> VerdictRow:
    return VerdictRow(row=f"op:{key}", dimension="op", key=key, unit="us", n_base=3, n_comp=3,
                      base_median=base, comp_median=comp)


def test_same_hardware_and_settings_are_like_for_like():
    facts = assess(side(world_size="8"), side("b.pt.trace.json.gz", world_size="8"))
    assert facts.comparable and facts.reasons == [] and facts.sentence() == ""
    assert facts.base.line() == ("a.pt.trace.json.gz — GPU, trace JSON, PyTorch profiler (Kineto), "
                                 "NVIDIA A100-SXM4-80GB, rank 0, 3 steps, world size 8")


def test_another_gpu_model_is_said():
    facts = assess(side(), side(name="Tesla V100-SXM2-32GB"))
    assert not facts.comparable
    assert facts.reasons == ["hardware differs (NVIDIA A100-SXM4-80GB vs Tesla V100-SXM2-32GB)"]
    assert facts.sentence() == "Not like for like — hardware differs (NVIDIA A100-SXM4-80GB vs Tesla V100-SXM2-32GB)."


def test_device_kind_and_host_only_traces():
    npu = side("run_ascend_pt", device="NPU", name="Ascend NPU", profiler_level="Level1")
    assert assess(side(), npu).reasons == ["device kind differs (GPU vs NPU)"]
    cpu = side(name="", basis="host")
    assert side_facts(cpu).kind == "CPU" and assess(side(), cpu).reasons == ["device kind differs (GPU vs CPU)"]
    assert side_facts(npu).export == "text export" and side_facts(side(export="db", device="NPU")).export == "DB export"


def test_profiler_settings_differ_only_where_both_record_them():
    a = side("a_ascend_pt", device="NPU", name="Ascend NPU", profiler_level="Level0", export="db")
    b = side("b_ascend_pt", device="NPU", name="Ascend NPU", profiler_level="Level1", export="text")
    assert assess(a, b).reasons == ["profiler settings differ (profiler level Level0 vs Level1, export db vs text)"]
    # a setting one side does not record is unknown there, not different
    assert assess(side(world_size="8"), side()).comparable


def test_model_differs_when_the_op_sets_barely_overlap():
    # base: a 100 + b 100 µs, 100 of 200 in shared ops (50 %); comparison: a 10 + c 190, 10 of 200 (5 %)
    verdict = Verdict(overall="neutral", rows=[op("a", 100.0, 10.0), op("b", 100.0, None), op("c", None, 190.0)])
    assert op_overlap(verdict) == pytest.approx((0.5, 0.05))
    assert assess(side(), side(), verdict).reasons == [
        "model differs (the op sets barely overlap: 50 % of the base's and 5 % of the comparison's op time "
        "is in ops both sides have)"]
    same = Verdict(overall="neutral", rows=[op("a", 100.0, 90.0), op("b", 100.0, None)])  # 50 % and 100 %
    assert assess(side(), side(), same).comparable
    assert op_overlap(Verdict(overall="neutral")) is None  # no op rows: no model check


def test_without_steps_the_operator_sheet_gives_the_overlap():
    # base: conv 300 + relu 100 µs, conv on both (300 of 400, 75 %); comparison: conv 50 + gelu 150 (25 %)
    sheet = Table(columns=["top", "name", "base_device_us", "base_count", "comp_device_us", "comp_count"],
                  rows=[[1, "aten::conv2d", 300.0, 2, 50.0, 2], [2, "aten::relu", 100.0, 4, 0.0, 0],
                        [3, "aten::gelu", 0.0, 0, 150.0, 4]])
    assert sheet_overlap(sheet) == pytest.approx((0.75, 0.25))
    facts = assess(side(), side(), Verdict(overall="inconclusive"), sheet)
    assert facts.reasons == ["model differs (the op sets barely overlap: 75 % of the base's and 25 % of the "
                             "comparison's op time is in ops both sides have)"]
    assert sheet_overlap(None) is None
