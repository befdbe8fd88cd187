"""ApiCompare across vendors: runtime calls paired by ``api_equivalence.toml`` (or ``--api-map``).

Literal host tables with the expected rows worked out by hand in the comments; then the shipped
table, the file checks, the command-line option and the recorded options.
"""

import re
import tomllib
from importlib import resources
from pathlib import Path

import openpyxl
import pytest

import perfcmp
from perfcmp.cli import main
from perfcmp.details.apis import api_sheets
from perfcmp.details.extract import extract
from perfcmp.names import load_api_map, load_normalizer
from perfcmp.options import CompareOptions, DetailOptions
from perfcmp.base.errors import UsageError
from perfcmp.readers.model import DeviceKind, Profile, RunInfo, table

ROOT = Path(__file__).resolve().parents[1]
GPU_DEMO = str(ROOT / "golden" / "demo" / "gpu" / "base.pt.trace.json.gz")
NPU_DEMO = str(ROOT / "golden" / "demo" / "npu" / "base_ascend_pt")
FIELDS = ("name", "base_total_us", "base_calls", "comp_total_us", "comp_calls", "total_ratio")


def side(device, host):
    """SideDetails of a profile whose host table is ``host``: (name, start, dur, parent, cat)
    rows, parents first; one thread."""
    host_t = table("host", name=[h[0] for h in host], cat=[h[4] for h in host], pid=[1] * len(host),
                   tid=[1] * len(host), start_us=[h[1] for h in host], dur_us=[h[2] for h in host],
                   parent=[h[3] for h in host])
    profile = Profile(RunInfo("x", device, "test"), [], host_t, table("device"), table("comm_tasks"), table("memory"),
                      table("timeline"))
    profile.check()
    return extract(profile, load_normalizer())


def rows(base, comp, opts=DetailOptions()):
    return [tuple(r[f] for f in FIELDS) for r in api_sheets(base, comp, opts)["statistic"].records()]


# A GPU step: two kernels launched under aten::mm, an NCCL-style ExC launch, a copy, a sync and a
# call with no NPU counterpart.
GPU_HOST = [
    ("aten::mm", 0.0, 50.0, -1, "cpu_op"),
    ("cudaLaunchKernel", 5.0, 10.0, 0, "runtime"),
    ("cudaLaunchKernel", 20.0, 20.0, 0, "runtime"),
    ("cudaFuncSetAttribute", 60.0, 1.0, -1, "runtime"),
    ("cudaLaunchKernelExC", 70.0, 5.0, -1, "runtime"),
    ("cudaMemcpyAsync", 80.0, 7.0, -1, "runtime"),
    ("cudaStreamSynchronize", 90.0, 100.0, -1, "runtime"),
]
# The same step on the NPU: the op and, on the CANN track (no parent), the aclnn two-phase calls,
# a copy and a sync.
NPU_HOST = [
    ("aten::mm", 0.0, 40.0, -1, "cpu_op"),
    ("AscendCL@aclnnMmGetWorkspaceSize", 2.0, 4.0, -1, "runtime"),
    ("AscendCL@aclnnMm", 8.0, 30.0, -1, "runtime"),
    ("AscendCL@aclnnAdd", 50.0, 6.0, -1, "runtime"),
    ("AscendCL@aclrtMemcpy", 60.0, 9.0, -1, "runtime"),
    ("AscendCL@aclrtSynchronizeStream", 70.0, 80.0, -1, "runtime"),
]


def test_gpu_against_npu_pairs_runtime_calls_by_job():
    got = rows(side(DeviceKind.GPU, GPU_HOST), side(DeviceKind.NPU, NPU_HOST))
    assert got == [
        ("aten::mm", 50.0, 1, 40.0, 1, 0.8),  # a framework op: matched by name as before
        # launches: GPU 10 + 20 + 5 = 35 µs in 3 calls (the larger total named first);
        # NPU aclnnMm 30 + aclnnAdd 6 = 36 µs in 2 calls, the GetWorkspaceSize phase apart
        ("cudaLaunchKernel, cudaLaunchKernelExC | AscendCL@aclnnMm, AscendCL@aclnnAdd", 35.0, 3, 36.0, 2, 36.0 / 35.0),
        ("cudaFuncSetAttribute", 1.0, 1, None, None, 0.0),  # no counterpart: base only
        ("cudaMemcpyAsync | AscendCL@aclrtMemcpy", 7.0, 1, 9.0, 1, 9.0 / 7.0),
        ("cudaStreamSynchronize | AscendCL@aclrtSynchronizeStream", 100.0, 1, 80.0, 1, 0.8),
        ("AscendCL@aclnnMmGetWorkspaceSize", None, None, 4.0, 1, None),  # comparison only
    ]


def test_npu_as_base_reads_npu_first():
    got = rows(side(DeviceKind.NPU, NPU_HOST), side(DeviceKind.GPU, GPU_HOST))
    names = [r[0] for r in got]
    assert "AscendCL@aclrtSynchronizeStream | cudaStreamSynchronize" in names
    assert "AscendCL@aclnnMm, AscendCL@aclnnAdd | cudaLaunchKernel, cudaLaunchKernelExC" in names


@pytest.mark.parametrize("device, host", [(DeviceKind.GPU, GPU_HOST), (DeviceKind.NPU, NPU_HOST)], ids=["gpu", "npu"])
def test_one_vendor_keeps_one_row_per_name(device, host):
    got = rows(side(device, host), side(device, host))
    names = [r[0] for r in got]
    assert names == list(dict.fromkeys(h[0] for h in host))  # every name, in order of first appearance
    assert all(r[5] == 1.0 for r in got)


def test_many_calls_of_a_side_are_counted_not_listed():
    launches = [(f"AscendCL@aclnnOp{i}", 10.0 * i, 1.0 + i, -1, "runtime") for i in range(4)]
    gpu = [("cudaLaunchKernel", 5.0, 10.0, -1, "runtime"), ("cudaLaunchKernel", 20.0, 20.0, -1, "runtime")]
    got = rows(side(DeviceKind.GPU, gpu), side(DeviceKind.NPU, launches))
    # GPU: 10 + 20 in 2 calls; NPU: 1 + 2 + 3 + 4 = 10 in 4 calls, aclnnOp3 the largest
    assert got == [("cudaLaunchKernel | AscendCL@aclnnOp3 +3 more", 30.0, 2, 10.0, 4, 10.0 / 30.0)]


def test_a_call_nested_in_its_own_group_counts_once(tmp_path):
    # AscendCL@aclnnAdd (10 µs) holds its tiling call (3 µs). Shipped table: the tiling call has
    # no GPU counterpart, a row of its own. A map grouping it with the launch: one call of 10 µs
    # (not 2 calls of 13 µs); self times 7 + 3 = 10 µs.
    npu = side(DeviceKind.NPU, [("AscendCL@aclnnAdd", 0.0, 10.0, -1, "runtime"),
                                ("AscendCL@Add_Tiling", 2.0, 3.0, 0, "runtime")])
    gpu = side(DeviceKind.GPU, [("cudaLaunchKernel", 0.0, 4.0, -1, "runtime")])
    nested = npu.apis.set_index("key")["nested"]
    assert nested["AscendCL@Add_Tiling"] == ((("AscendCL@aclnnAdd",), 3.0, 1),)
    assert nested["AscendCL@aclnnAdd"] == ()
    assert rows(gpu, npu) == [("cudaLaunchKernel | AscendCL@aclnnAdd", 4.0, 1, 10.0, 1, 2.5),
                              ("AscendCL@Add_Tiling", None, None, 3.0, 1, None)]
    custom = tmp_path / "map.toml"
    custom.write_text('[[equivalent]]\nkey = "launch"\nnames = ["cudaLaunchKernel", "AscendCL@aclnnAdd", '
                      '"AscendCL@Add_Tiling"]\n')
    sheet = api_sheets(gpu, npu, DetailOptions(api_map=str(custom)))["statistic"].records()
    assert [(r["name"], r["comp_total_us"], r["comp_self_us"], r["comp_calls"]) for r in sheet] == [
        ("cudaLaunchKernel | AscendCL@aclnnAdd, AscendCL@Add_Tiling", 10.0, 10.0, 1)]


def test_framework_ops_keep_their_keys_across_vendors():
    # c10d::allreduce_ holding HcclAllreduce: one "allreduce" op key (op_equivalence.toml), as
    # before; the CANN-level collective call is a runtime row of its own, never folded into it
    gpu = side(DeviceKind.GPU, [("c10d::allreduce_", 0.0, 20.0, -1, "cpu_op"),
                                ("nccl:all_reduce", 1.0, 15.0, 0, "user_annotation"),
                                ("cudaLaunchKernelExC", 2.0, 5.0, 1, "runtime")])
    npu = side(DeviceKind.NPU, [("c10d::allreduce_", 0.0, 30.0, -1, "cpu_op"),
                                ("HcclAllreduce", 1.0, 25.0, 0, "cpu_op"),
                                ("Communication@hcom_allReduce_", 3.0, 12.0, -1, "runtime")])
    assert rows(gpu, npu) == [("c10d::allreduce_", 20.0, 1, 30.0, 1, 1.5),
                              ("cudaLaunchKernelExC", 5.0, 1, None, None, 0.0),
                              ("Communication@hcom_allReduce_", None, None, 12.0, 1, None)]
    assert list(npu.apis["key"]) == ["allreduce", "Communication@hcom_allReduce_"]


# --- the shipped table ------------------------------------------------------------------------

def shipped():
    return tomllib.loads(resources.files("perfcmp").joinpath("api_equivalence.toml").read_text("utf-8"))["equivalent"]


def test_every_shipped_group_pairs_calls_of_two_vendors():
    # Ascend (AscendCL@ / Communication@), AMD (hip...), NVIDIA (cuda... / cu... / nccl...)
    vendors = [("Ascend", re.compile(r"^\(?(AscendCL|Communication)")), ("AMD", re.compile(r"^hip")),
               ("NVIDIA", re.compile(r"^(cu|nccl)"))]
    for group in shipped():
        spelled = group.get("names", []) + group.get("patterns", [])
        found = {v for s in spelled for v, rule in vendors if rule.match(s)}
        assert len(found) >= 2, group["key"]
        if "Ascend" not in found:  # the GPU-only groups: a CUDA call and its HIP twin
            assert found == {"AMD", "NVIDIA"}, group["key"]


def test_shipped_names_are_runtime_calls_the_op_table_leaves_alone():
    ops = load_normalizer()
    names = [n for group in shipped() for n in group.get("names", [])]
    assert len(names) == len(set(names))
    assert [n for n in names if ops.key(n) != n] == []  # nothing already paired by op_equivalence.toml


@pytest.mark.parametrize("name, key", [
    ("cudaStreamSynchronize", "synchronize stream"), ("AscendCL@aclrtSynchronizeStreamWithTimeout", "synchronize stream"),
    ("cudaDeviceSynchronize", "synchronize device"), ("AscendCL@aclrtSynchronizeDevice", "synchronize device"),
    ("cudaEventSynchronize", "synchronize event"),
    ("cudaLaunchKernel", "launch kernel"), ("cudaLaunchKernelExC", "launch kernel"), ("cuLaunchKernel", "launch kernel"),
    ("hipLaunchKernel", "launch kernel"), ("AscendCL@aclnnInplaceCopy", "launch kernel"),
    ("AscendCL@aclnnInplaceCopyGetWorkspaceSize", None), ("AscendCL@aclopCompileAndExecute", None),
    ("AscendCL@Add_Tiling", None), ("AscendCL@aclCreateTensorDesc", None), ("cudaFuncSetAttribute", "set function attribute"),
    ("hipFuncSetAttribute", "set function attribute"), ("hipExtModuleLaunchKernel", "launch kernel"),
    ("hipGetDevicePropertiesR0600", "device properties"), ("cudaGetDeviceProperties", "device properties"),
    ("hipStreamSynchronize", "synchronize stream"), ("hipDeviceSynchronize", "synchronize device"),
    ("hipMemcpyAsync", "copy memory"), ("hipMalloc", "allocate device memory"), ("hipFree", "free device memory"),
    ("cudaMemcpyAsync", "copy memory"), ("hipMemcpyWithStream", "copy memory"), ("AscendCL@aclrtMemcpyAsync", "copy memory"),
    ("cudaMemsetAsync", "set memory"), ("cudaMalloc", "allocate device memory"), ("cudaFree", "free device memory"),
    ("cudaEventRecord", "record event"), ("AscendCL@aclrtRecordEvent", "record event"),
    ("cudaStreamWaitEvent", "wait for event"), ("AscendCL@aclrtStreamWaitEvent", "wait for event"),
    ("AscendCL@aclrtQueryEventStatus", "query event"), ("AscendCL@hcom_allReduce_", "allreduce call"),
    ("Communication@hcom_allGather_", "allgather call"), ("aten::mm", None), ("HcclAllreduce", None),
])
def test_real_runtime_names_and_their_groups(name, key):
    groups = load_api_map()
    assert (groups.key(name) if groups.how(name) == "equivalent" else None) == key


# --- --api-map files --------------------------------------------------------------------------

@pytest.mark.parametrize("text, phrase", [
    ("[[equivalent]\nkey = 1", "not TOML"),
    ("", "no [[equivalent]] tables"),
    ("[group]\nkey = 'x'", "unknown top-level entry 'group'"),
    ("[[equivalent]]\nnames = ['a']", "has no key"),
    ("[[equivalent]]\nkey = 'x'\nname = ['a']", "unknown field 'name'"),
    ("[[equivalent]]\nkey = 'x'", "lists no names and no patterns"),
    ("[[equivalent]]\nkey = 'x'\nnames = 'a'", "names must be a list of non-empty strings"),
    ("[[equivalent]]\nkey = 'x'\npatterns = ['(']", "is no regular expression"),
    ("[[equivalent]]\nkey = 'x'\nnames = ['a']\n[[equivalent]]\nkey = 'y'\nnames = ['a']", "'a' is in two groups"),
])
def test_malformed_api_maps_name_the_file_and_the_fault(tmp_path, text, phrase):
    path = tmp_path / "map.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as caught:
        load_api_map(str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and phrase in message and "\n" not in message, message


def test_missing_api_map_fails_when_the_options_are_made(tmp_path):
    with pytest.raises(UsageError, match=r"cannot read API map \(No such file or directory\)"):
        DetailOptions(api_map=str(tmp_path / "none.toml"))


def test_api_map_is_recorded_in_the_options(tmp_path):
    path = tmp_path / "map.toml"
    path.write_text("equivalent = []\n")  # allowed: no runtime call is paired across vendors
    options = CompareOptions(base_path="a", comp_path="b", detail=DetailOptions(api_map=str(path)))
    assert options.as_dict()["api_map"] == str(path)
    assert CompareOptions(base_path="a", comp_path="b").as_dict()["api_map"] is None


# --- the command line and the Python API on the GPU vs NPU demo pair --------------------------

def api_names(capsys, tmp_path, *args):
    out = tmp_path / "x.xlsx"
    code = main(["compare", "-d", NPU_DEMO, "-bp", GPU_DEMO, "--enable_api_compare", "--format", "xlsx",
                 "-o", str(out), *args])
    capsys.readouterr()
    assert code == 0
    return [row[1] for row in openpyxl.load_workbook(out, read_only=True)["ApiCompare"].iter_rows(min_row=4, values_only=True)]


def test_cli_api_map_replaces_the_shipped_table(tmp_path, capsys):
    shipped_names = api_names(capsys, tmp_path)
    assert "cudaStreamSynchronize | AscendCL@aclrtSynchronizeStream" in shipped_names
    assert "cudaMemcpyAsync | AscendCL@aclrtMemcpy" in shipped_names
    custom = tmp_path / "sync_only.toml"
    custom.write_text('[[equivalent]]\nkey = "host waits"\nnames = ["cudaStreamSynchronize", '
                      '"AscendCL@aclrtSynchronizeStream"]\n')
    names = api_names(capsys, tmp_path, "--api-map", str(custom))
    assert "cudaStreamSynchronize | AscendCL@aclrtSynchronizeStream" in names
    # the shipped groups are gone: copies and launches are each side's own rows again
    assert {"cudaMemcpyAsync", "AscendCL@aclrtMemcpy", "cudaLaunchKernel", "AscendCL@aclnnMm"} <= set(names)


@pytest.mark.parametrize("content, phrase", [(None, "cannot read API map"), ("[[equivalent]]\nkey = 'x'\nnames = [1]",
                                                                          "names must be a list of non-empty strings")])
def test_cli_bad_api_map_is_a_one_line_error(tmp_path, capsys, content, phrase):
    path = tmp_path / "map.toml"
    if content is not None:
        path.write_text(content)
    code = main(["compare", "-d", NPU_DEMO, "-bp", GPU_DEMO, "--api-map", str(path), "-o", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"perfcmp: error: {path}: ") and phrase in err, err
    assert not (tmp_path / "out").exists()


def test_python_api_pairs_the_demo_runtime_calls(tmp_path):
    result = perfcmp.compare(GPU_DEMO, NPU_DEMO, dimensions=["api"])
    assert result.options["api_map"] is None
    frame = result.table("apis").set_index("name")
    paired = frame[frame["presence"] == "both"]
    runtime = [n for n in paired.index if "|" in n]
    assert runtime == ["cudaMemcpyAsync | AscendCL@aclrtMemcpy",
                       "cudaLaunchKernel, cudaLaunchKernelExC | AscendCL@aclnnMm +20 more",
                       "cudaStreamSynchronize | AscendCL@aclrtSynchronizeStream"]
    sync = paired.loc["cudaStreamSynchronize | AscendCL@aclrtSynchronizeStream"]
    assert (sync["base_calls"], sync["comp_calls"]) == (8, 3)
    assert (sync["base_total_us"], sync["comp_total_us"]) == pytest.approx((22989.524, 8358.777))
    launch = paired.loc["cudaLaunchKernel, cudaLaunchKernelExC | AscendCL@aclnnMm +20 more"]
    assert (launch["base_calls"], launch["comp_calls"]) == (312 + 16, 105)
    assert launch["base_total_us"] == pytest.approx(1718.455 + 176.517)
