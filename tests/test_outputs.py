"""JSON and Markdown outputs: the schema, determinism, portable paths, tables, ranking, escaping.

Two kinds of results: the shipped GPU demo pair through ``pipeline.run`` (inputs named by
absolute paths, as a CI job would), and small literal ones whose every number is written here.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import msgspec
import pytest
from markdown_it import MarkdownIt

from perfcmp.results import pair as model
from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from perfcmp.render import jsonout, markdown
from perfcmp.results.pair import (
    ComparisonResult,
    GateResult,
    OverallRow,
    SideSummary,
    Table,
    Verdict,
    VerdictRow,
    WarningRecord,
)

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "golden" / "demo" / "gpu"
SCHEMA_PATH = REPO / "report_templates" / "result.schema.json"
MIB = 1 << 20


# --- builders ----------------------------------------------------------------------------------

def demo_result() -> ComparisonResult:
    return run(CompareOptions(str(DEMO / "base.pt.trace.json.gz"), str(DEMO / "comp.pt.trace.json.gz"),
                              formats=("json", "md")))


def vrow(row: str, verdict: str, base: float, comp: float, unit: str = "us", p: float | None = 0.004,
         n1: bool = False) -> VerdictRow:
    dimension, key = row.split(":", 1)
    return VerdictRow(row=row, dimension=dimension, key=key, unit=unit, n_base=5, n_comp=5, base_median=base,
                      comp_median=comp, diff=comp - base, relative=(comp - base) / base if base else None,
                      ci_low=(comp - base) * 0.8, ci_high=(comp - base) * 1.2, p_value=p, p_adjusted=p,
                      verdict=verdict, n1=n1)


def literal_verdict() -> Verdict:
    return Verdict(
        overall="regression", reasons=["E2E +8.0 % per step"], skip_steps=(1, 1), skip_reason="--skip-steps 1",
        outlier_steps={"comparison": [7], "base": []}, n_steps=(5, 5),
        thresholds={"relative": 0.05, "absolute_us": 20.0, "correction": "holm"},
        rows=[
            vrow("op:aten::mm", "regressed", 1000.0, 3000.0),             # +2.000 ms
            vrow("overall:e2e", "regressed", 100000.0, 108000.0, p=0.0002),  # +8.000 ms
            vrow("op:a|b\nc", "regressed", 500.0, 1000.0, p=None, n1=True),  # +0.500 ms
            vrow("memory:peak_allocated", "regressed", 100 * MIB, 164 * MIB, unit="bytes"),
            vrow("op:aten::add", "improved", 800.0, 300.0),
            vrow("kernel:new_kernel", "comparison only", 0.0, 50.0, p=None),
            vrow("op:aten::relu", "unchanged", 40.0, 41.0, p=0.8),
        ],
        gates=[GateResult(expression="e2e:+3%", failed=True, rows=["overall:e2e"],
                          message="e2e:+3%: FAILED — overall:e2e +8.0 % (limit +3 %)"),
               GateResult(expression="memory:+50%", failed=False, message="memory:+50%: passed (all below)")],
        exit_code=1,
    )


def side(source: str, e2e: float) -> SideSummary:
    return SideSummary(source=source, device="GPU", producer="PyTorch profiler (Kineto)", steps=[1, 2],
                       window_us=(0.0, e2e), e2e_us=e2e, computing_us=e2e * 0.7, uncovered_us=e2e * 0.2,
                       free_us=e2e * 0.1, peak_allocated_bytes=None, sha256="ab" * 32)


def literal_result(base_source: str = "/nowhere/runs/base.json", comp_source: str = "/nowhere/runs/comp.json",
                   verdict: Verdict | None = None, warnings: int = 2) -> ComparisonResult:
    rows = [OverallRow(key=k, label=label, level=0, base_us=b, comp_us=c, diff_us=c - b, ratio=model.ratio(c, b))
            for k, label, b, c in (("computing", "Computing Time", 70.0, 80.0), ("comm", "Uncovered Communication Time", 20.0, 20.0),
                                   ("free", "Free Time", 10.0, 8.0), ("e2e", "E2E Time", 100.0, 108.0))]
    notes = [WarningRecord(side="base", source=f"{base_source}/inner.csv", message=f"{base_source} had {i} odd events",
                           count=i + 1) for i in range(warnings)]
    return ComparisonResult(
        tool_version="0.0-test", base=side(base_source, 100.0), comparison=side(comp_source, 108.0), overall=rows,
        dimension_tables={"operators": {"statistic": Table(columns=["name", "base_us"],
                                                           rows=[["x|y", 1.5], [None, 2]])},
                          "apis": {"statistic": Table(columns=["name"], rows=[["a"]])}},
        verdict=verdict, warnings=notes,
        options={"top": 10, "categories": "/nowhere/cats.toml", "base_step": None, "compare": "profiling"})


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text("utf-8"))


@pytest.fixture(scope="module")
def demo() -> ComparisonResult:
    return demo_result()


# --- JSON --------------------------------------------------------------------------------------

def test_schema_is_a_valid_2020_12_schema_of_the_current_version(schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["format_version"]["const"] == model.FORMAT_VERSION


@pytest.mark.parametrize("struct, name", [
    (model.result_document(), None), (SideSummary, "side"), (OverallRow, "overall_row"),
    (model.StepMetrics, "step_metrics"),
    (model.StepRow, "step_row"), (Table, "table"), (VerdictRow, "verdict_row"), (GateResult, "gate"),
    (Verdict, "verdict"), (WarningRecord, "warning"), (model.MigrationRow, "migration_row"),
    (model.KernelShare, "kernel_share"),
])
def test_schema_documents_every_field_as_required(schema, struct, name):
    """The JSON document's fields (the result's, its tables as ``details``: ``model.document``)."""
    node = schema if name is None else schema["$defs"][name]
    fields = [f.encode_name for f in msgspec.structs.fields(struct)]
    assert list(node["properties"]) == fields
    assert node["required"] == fields
    assert node["additionalProperties"] is False


def test_schema_enumerates_the_verdict_labels(schema):
    assert schema["$defs"]["verdict_row"]["properties"]["verdict"]["enum"] == [
        "regressed", "improved", "unchanged", "within noise", "base only", "comparison only", "not comparable",
        "inconclusive"]
    assert schema["$defs"]["verdict"]["properties"]["overall"]["enum"] == [
        "regression", "improvement", "neutral", "inconclusive"]


@pytest.mark.parametrize("case", ["demo", "demo with a literal verdict", "literal", "literal without verdict"])
def test_json_validates_against_the_schema(schema, demo, case):
    result = {"demo": demo, "demo with a literal verdict": msgspec.structs.replace(demo, verdict=literal_verdict()),
              "literal": literal_result(verdict=literal_verdict()), "literal without verdict": literal_result()}[case]
    jsonschema.Draft202012Validator(schema).validate(json.loads(jsonout.render(result)))


def test_json_layout_sorted_dicts_indent_one_trailing_newline():
    data = jsonout.render(literal_result(verdict=literal_verdict()))
    assert data.startswith(b'{\n "format_version": 2,\n "tool_version"') and data.endswith(b"}\n")
    doc = json.loads(data)
    assert list(doc) == [f.encode_name for f in msgspec.structs.fields(model.result_document())]  # struct order kept
    assert list(doc["details"]) == ["ApiCompare", "OperatorCompareStatistic"]  # the peer's names, sorted
    assert list(doc["options"]) == sorted(doc["options"])
    assert list(doc["verdict"]["thresholds"]) == ["absolute_us", "correction", "relative"]
    assert list(doc["verdict"]["outlier_steps"]) == ["base", "comparison"]
    assert doc["base"]["sha256"] == "ab" * 32


def test_json_reads_back_as_the_portable_result():
    result = literal_result(verdict=literal_verdict())
    assert ComparisonResult.from_json(jsonout.render(result)) == jsonout.portable(result)


def test_demo_json_carries_input_hashes_and_the_verdict(demo):
    doc = json.loads(jsonout.render(demo))
    for role in ("base", "comparison"):
        assert len(doc[role]["sha256"]) == 64
    assert doc["base"]["sha256"] != doc["comparison"]["sha256"]
    assert doc["verdict"]["overall"] in ("regression", "improvement", "neutral", "inconclusive")
    assert doc["verdict"]["thresholds"] and doc["verdict"]["rows"]


@pytest.mark.parametrize("block", [1, 2, 3, 1000])
def test_json_written_a_block_of_rows_at_a_time_is_the_whole_document(demo, tmp_path, monkeypatch, block):
    # the document encoded and formatted in one piece, as before large tables were streamed
    whole = msgspec.json.format(msgspec.json.encode(model.document(jsonout.portable(demo)), order="deterministic",
                                                    enc_hook=model.encode_hook), indent=1) + b"\n"
    monkeypatch.setattr(jsonout, "ROWS_BLOCK", block)  # every table with more rows written in blocks
    streamed = jsonout.render(demo)
    assert streamed == whole
    jsonout.render_file(demo, str(tmp_path / "r.json"))
    assert (tmp_path / "r.json").read_bytes() == whole
    assert len(json.loads(streamed)["details"]["ModuleCompare"]["rows"]) > 3  # a table that was written in blocks


def test_outputs_are_byte_identical_across_two_runs():
    first, second = demo_result(), demo_result()
    assert jsonout.render(first) == jsonout.render(second)
    assert markdown.render(first) == markdown.render(second)
    literal = literal_result(verdict=literal_verdict())
    assert markdown.render(literal) == markdown.render(literal_result(verdict=literal_verdict()))


# --- paths -------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, expected", [
    ("golden/demo/base.json", "golden/demo/base.json"),  # relative: as given
    ("../elsewhere/base.json", "../elsewhere/base.json"),
    ("/cwd/runs/a/base.json", "runs/a/base.json"),       # inside the current directory
    ("/cwd/runs/../base.json", "base.json"),
    ("/other/runs/base.json", "base.json"),              # outside: the base name
    ("/other/runs/npu_profile/", "npu_profile"),
    ("/cwd", "cwd"),
    ("C:\\runs\\base.json", "base.json"),                # Windows absolute, anywhere
    ("\\\\host\\share\\base.json", "base.json"),
])
def test_portable_path_rule(path, expected):
    assert jsonout.portable_path(path, cwd="/cwd") == expected


def test_portable_rewrites_whole_paths_in_messages_only():
    result = literal_result(base_source="/in/base", comp_source="/in/base_2")
    result = msgspec.structs.replace(result, warnings=[
        WarningRecord(side="base", source="/in/base/x.csv", message="/in/base/x.csv and /in/base_2/y.csv unreadable")])
    shown = jsonout.portable(result, cwd="/elsewhere")
    assert (shown.base.source, shown.comparison.source) == ("base", "base_2")
    assert shown.warnings[0].source == "base/x.csv"
    assert shown.warnings[0].message == "base/x.csv and base_2/y.csv unreadable"
    assert shown.options["categories"] == "cats.toml"


def test_no_absolute_path_when_sources_are_absolute(tmp_path, monkeypatch, demo):
    monkeypatch.chdir(tmp_path)  # the inputs lie outside the current directory: base names only
    results = [demo, msgspec.structs.replace(demo, verdict=literal_verdict()), literal_result(verdict=literal_verdict())]
    for result in results:
        data, text = jsonout.render(result).decode(), markdown.render(result)
        for absolute in (str(REPO), "/nowhere", str(tmp_path)):
            assert absolute not in data and absolute not in text
    doc = json.loads(jsonout.render(demo))
    assert (doc["base"]["source"], doc["comparison"]["source"]) == ("base.pt.trace.json.gz", "comp.pt.trace.json.gz")


def test_absolute_sources_inside_the_current_directory_become_relative(monkeypatch, demo):
    monkeypatch.chdir(REPO)
    doc = json.loads(jsonout.render(demo))
    assert doc["base"]["source"] == "golden/demo/gpu/base.pt.trace.json.gz"
    assert "golden/demo/gpu/comp.pt.trace.json.gz" in markdown.render(demo)


# --- Markdown ----------------------------------------------------------------------------------

def tables(text: str) -> list[list[list[str]]]:
    """Each table of ``text`` as rows of cell texts (header row first), as GitHub would see them."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    out, rows = [], None
    for tok in tokens:
        if tok.type == "table_open":
            rows = []
        elif tok.type == "tr_open":
            rows.append([])
        elif tok.type == "inline" and rows is not None and rows:
            rows[-1].append("".join(child.content for child in tok.children or []))
        elif tok.type == "table_close":
            out.append(rows)
            rows = None
    return out


def section(text: str, title: str) -> str:
    start = text.index(f"### {title}")
    end = text.find("\n### ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def test_markdown_opens_with_the_verdict_and_the_headline(demo):
    text = markdown.render(msgspec.structs.replace(demo, verdict=literal_verdict()))
    lines = text.splitlines()
    assert lines[0] == "## perfcmp: regression"
    assert lines[2].startswith("- **Base:** ") and "GPU, trace JSON" in lines[2] and "8 steps" in lines[2]
    assert lines[3].startswith("- **Comparison:** ")
    # the GPU demo pair, 8 steps: ProfilerStep#1 ts to ProfilerStep#8 ts + dur, 34308.880 µs against 37270.425 µs
    assert lines[5].startswith("E2E 34.31 ms → 37.27 ms (+8.6 %)")
    assert markdown.render(msgspec.structs.replace(demo, verdict=None)).splitlines()[0] == "## perfcmp"


def test_markdown_tables_parse_as_tables():
    text = markdown.render(literal_result(verdict=literal_verdict()))
    assert sum(tok.type == "table_open" for tok in MarkdownIt("commonmark").enable("table").parse(text)) == 3
    found = tables(text)
    assert found[0][0][1:] == ["Base", "Comparison", "Diff", "Change"]
    assert found[0][0][0] == "Metric"
    assert "### Time distribution (ms, whole profile, " in text  # what the numbers are (perfcmp.scope)
    assert [row[0] for row in found[0][1:]] == ["E2E", "Computing", "Uncovered Communication", "Free"]
    assert found[0][1] == ["E2E", "0.100 ms", "0.108 ms", "+0.008 ms", "+8.0 %"]
    for table in found:  # an escaped "|" must not add a cell
        assert len({len(row) for row in table}) == 1


def test_markdown_lists_regressions_largest_first_with_their_numbers():
    text = markdown.render(literal_result(verdict=literal_verdict()))
    regressions, improvements = tables(text)[1], tables(text)[2]
    assert regressions[0] == ["#", "Row", "Base", "Comparison", "Diff", "Change", "p adj."]
    assert regressions[1:] == [
        ["1", "overall:e2e", "100.000 ms", "108.000 ms", "+8.000 ms", "+8.0 %", "< 0.001"],
        ["2", "op:aten::mm", "1.000 ms", "3.000 ms", "+2.000 ms", "+200.0 %", "0.004"],
        ["3", "op:a|b c", "0.500 ms", "1.000 ms", "+0.500 ms", "+100.0 %", "n=1"],
        ["4", "memory:peak_allocated", "100.00 MiB", "164.00 MiB", "+64.00 MiB", "+64.0 %", "0.004"],
    ]
    assert "### Top regressions (4; per-step medians, time in ms, memory in MiB)" in text
    assert improvements[1:] == [["1", "op:aten::add", "0.800 ms", "0.300 ms", "-0.500 ms", "-62.5 %", "0.004"]]
    assert "aten::relu" not in text and "new_kernel" not in text  # neither regressed nor improved


def test_markdown_top_limits_the_rows():
    text = markdown.render(literal_result(verdict=literal_verdict()), top=2)
    assert [row[1] for row in tables(text)[1][1:]] == ["overall:e2e", "op:aten::mm"]
    assert "… and 2 more" in section(text, "Top regressions")


def test_markdown_escapes_pipes_and_newlines_in_cells():
    text = markdown.render(literal_result(verdict=literal_verdict()))
    assert "| op:a\\|b c |" in text
    assert "a|b\nc" not in text


@pytest.mark.parametrize("name", ["aten::_foo_", "*x* and **y**", "k<float, 10>(int*)", "`tick`", "[a](b)",
                                  "~~gone~~", "a\\|b", "&amp; peak_allocated"])
def test_markdown_shows_names_literally(name):
    verdict = msgspec.structs.replace(literal_verdict(), rows=[vrow(f"op:{name}", "regressed", 1.0, 2.0)])
    text = markdown.render(literal_result(verdict=verdict))
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(section(text, "Top regressions"))
    children = [c for t in tokens if t.type == "inline" for c in t.children or []]
    assert not any(c.type in ("em_open", "strong_open", "s_open", "code_inline", "link_open", "html_inline")
                   for c in children)
    assert tables(text)[1][1][1] == f"op:{name}"


def test_markdown_shows_failed_gates_and_warnings():
    text = markdown.render(literal_result(verdict=literal_verdict(), warnings=12))
    gates = section(text, "Failed gates (1)")
    assert "- e2e:+3%: FAILED — overall:e2e +8.0 % (limit +3 %)" in gates
    assert "memory:+50%" not in text
    notes = section(text, "Warnings (12)")
    assert notes.count("\n- ") == 11 and "- … and 2 more" in notes
    assert "- base: runs/base had 1 odd events (×2)" not in notes  # outside the cwd: base names
    assert "- base: base.json had 1 odd events (×2)" in notes


def test_markdown_says_when_nothing_regressed():
    verdict = msgspec.structs.replace(literal_verdict(), overall="neutral", gates=[], exit_code=0,
                                      rows=[vrow("op:aten::relu", "unchanged", 40.0, 41.0)])
    text = markdown.render(literal_result(verdict=verdict))
    assert "### Top regressions\n\nNo row regressed." in text
    assert "Improvements" not in text and "Failed gates" not in text


def test_markdown_warnings_that_look_like_markup_stay_one_item_each():
    result = msgspec.structs.replace(literal_result(), warnings=[
        WarningRecord(side="", source="", message=text) for text in ("1. step missing", "- dash", "# hash", "a\n\nb")])
    tokens = MarkdownIt("commonmark").parse(section(markdown.render(result), "Warnings (4)"))
    assert [t.type for t in tokens].count("list_item_open") == 4
    assert not any(t.type in ("ordered_list_open", "heading_open") for t in tokens[1:])
    assert [t.content for t in tokens if t.type == "inline"][1:] == [
        "1\\. step missing", "\\- dash", "\\# hash", "a b"]
