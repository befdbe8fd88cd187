"""``--help`` and ``--version``: one spelling per option (the others still parse), metavars,
panels, examples, nothing cut at 80 columns. The help screens are drawn in plain text by
``perfcmp.commands.helpscreen`` (not rich); the assertions are on words and boxes, not on
column widths, and colour escapes are stripped first."""

from __future__ import annotations

import re

import pytest
import typer

from perfcmp import __version__
from perfcmp.cli import app, main

ANSI = re.compile(r"\033\[[0-9;]*m")
COMMANDS = [[], ["compare"], ["render"], ["history"], ["golden"], ["golden", "check"], ["golden", "save"],
            ["golden", "list"]]
# shown spelling -> the spellings --help must not show
ALIASES = {"--profiling_path": ["--profiling-path"], "--benchmark_profiling_path": ["--benchmark-profiling-path"],
           "--output_path": ["--output-path"], "--base-step": ["--base_step"], "--comparison-step": ["--comparison_step"],
           "--gpu_flow_cat": ["--gpu-flow-cat"], "--npu-source": ["--npu_source"],
           "--enable_operator_compare": ["--enable-operator-compare"], "--max_kernel_num": ["--max-kernel-num"],
           "--skip-steps": ["--skip_steps"], "--fail-on": ["--fail_on"], "--require-verdict": ["--require_verdict"]}


def help_text(capsys, monkeypatch, *command: str) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    assert main([*command, "--help"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return ANSI.sub("", out)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "perfcmp")
def test_help_fits_80_columns_and_cuts_nothing(command, capsys, monkeypatch):
    text = help_text(capsys, monkeypatch, *command)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "<bool>" not in text  # a flag takes no value


def test_compare_help_names_each_option_once(capsys, monkeypatch):
    text = help_text(capsys, monkeypatch, "compare")
    options = re.findall(r"(?<![\w-])(--[a-z][\w-]*)", text)
    shown = [o for o in options if o in ALIASES or any(o in hidden for hidden in ALIASES.values())]
    assert sorted(set(shown)) == sorted(ALIASES)  # every shown spelling, no hidden one
    table_rows = [line for line in text.splitlines() if re.match(r"│ \*?\s{0,3}--", line)]
    names = [re.search(r"--[\w-]+", line).group(0) for line in table_rows]
    assert len(names) == len(set(names)) and "--enable_communication_compare" in names and "--quiet" in names


def test_compare_help_has_panels_metavars_and_examples(capsys, monkeypatch):
    text = help_text(capsys, monkeypatch, "compare")
    for panel in ("Inputs", "Outputs", "Dimensions", "Gates & verdict"):
        assert re.search(rf"╭─ {re.escape(panel)} ─", text), panel
    for option, metavar in (("--profiling_path", "PATH"), ("--output_path", "DIR|FILE.xlsx"), ("--base-step", "STEP"),
                            ("--top", "N"), ("--fail-on", "GATE"), ("--policy", "FILE")):
        assert re.search(rf"{re.escape(option)}\s.*\s{re.escape(metavar)}\s", text), option
    assert "Examples:" in text and "perfcmp render result.json" in text


def test_history_help_lists_its_own_formats(capsys, monkeypatch):
    from perfcmp.choices import HISTORY_FORMATS as FORMATS

    text = " ".join(help_text(capsys, monkeypatch, "history").replace("│", " ").split())
    assert f"of: {', '.join(FORMATS)} (default: console" in text and FORMATS[-1] == "html"


def test_hidden_spellings_still_parse():
    group = typer.main.get_command(app)
    compare = group.get_command(None, "compare")
    for spelling in (["--profiling_path", "a", "--benchmark_profiling_path", "b", "--base_step", "1", "--comparison-step", "2"],
                     ["--profiling-path", "a", "--benchmark-profiling-path", "b", "--base-step", "1", "--comparison_step", "2"]):
        ctx = compare.make_context("compare", [*spelling, "--enable-api-compare", "--fail_on", "e2e:+3%"])
        assert (ctx.params["profiling_path"], ctx.params["benchmark_profiling_path"]) == ("a", "b")
        assert (ctx.params["base_step"], ctx.params["comparison_step"]) == (1, 2)
        assert ctx.params["enable_api"] and ctx.params["fail_on"] == ["e2e:+3%"]


def test_version(capsys):
    assert main(["--version"]) == 0
    out, err = capsys.readouterr()
    assert out == f"perfcmp {__version__}\n" and err == ""


def test_shell_completion_offers_the_shown_spellings(monkeypatch, capsys):
    monkeypatch.setenv("_PERFCMP_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", "perfcmp compare --prof")
    monkeypatch.setenv("COMP_CWORD", "2")
    with pytest.raises(SystemExit):
        main([])
    assert capsys.readouterr().out.split() == ["--profiling_path"]


def loaded_after(argv: list[str]) -> list[str]:
    """The heavy modules loaded by ``perfcmp.cli.main(argv)`` in a fresh interpreter."""
    import subprocess
    import sys

    heavy = ("pandas", "numpy", "perfcmp.pipeline", "perfcmp.readers.detect", "pydantic", "rich", "typer")
    code = ("import contextlib, io, sys\nfrom perfcmp import cli\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    cli.main({argv!r})\n"
            f"print(','.join(sorted(m for m in {heavy!r} if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip().split(",") if done.stdout.strip() else []


@pytest.mark.parametrize("argv", [["--help"], ["compare", "--help"], ["history", "--help"], ["golden", "check", "--help"]])
def test_help_loads_no_analysis_code_nor_value_converter(argv):
    """``--help`` answers before pandas or numpy are imported (start-up time: the analysis costs
    ~0.4 s of imports that help never needs), without typer's pydantic value converter (a
    flag not given is False, which typer takes as it is), and without rich (the screens are
    drawn in plain text)."""
    assert loaded_after(argv) == ["typer"]


def test_version_answers_before_typer_loads():
    assert loaded_after(["--version"]) == []


def parsed(argv: list[str], typers_own: bool) -> dict:
    """``ctx.params`` of ``perfcmp <argv>`` as parsed (nothing run); ``typers_own``: every value
    through typer's own (pydantic) validator instead of ``commands.common.PlainValues``."""
    command, names = typer.main.get_command(app), []
    while hasattr(command, "get_command"):  # a group: the next word names its command
        names.append(argv[len(names)])
        command = command.get_command(None, names[-1])
    if typers_own:
        for param in command.params:
            param._runtime_param = None
    return command.make_context(" ".join(names), argv[len(names):]).params


@pytest.mark.parametrize("argv", [
    ["compare", "-d", "a", "-bp", "b"],
    ["compare", "-d", "a", "-bp", "b", "--top", "7", "--base-step", "-3", "--jobs", "07", "--fail-on", "e2e:+3%",
     "--fail_on", "op:x:+1%", "--detail-rank", "0", "--detail-rank", "12", "--base-run", "c", "--format", "json"],
    ["compare", "-d", "a", "-bp", "b", "--skip-steps", "+2", "--rank", " 4", "--top", "1_0"],
    ["history", "x", "y", "z", "--order", "name", "--top", "3", "--skip-steps", "0"],
    ["golden", "check", "ref", "p1", "p2", "--fail-on", "e2e:+1%", "--skip-steps", "2"],
    ["render", "r.json", "--top", "12", "-o", "-"],
], ids=["defaults", "plain", "not-plain", "history", "golden", "render"])
def test_plain_values_are_taken_as_typers_own_validator_takes_them(argv):
    """The same values, of the same types (lists stay lists), whether or not they went
    through pydantic; values not certainly plain (07, +2, ' 4', 1_0) go to typer's validator."""
    ours, typers = parsed(argv, False), parsed(argv, True)
    assert ours == typers and [type(v) for v in ours.values()] == [type(v) for v in typers.values()]
    if argv == ["compare", "-d", "a", "-bp", "b"]:
        assert ours["fail_on"] == () and ours["top"] == 10 and ours["base_step"] is None


def test_a_bad_integer_is_refused_with_typers_own_message():
    ours = pytest.raises(typer.BadParameter, parsed, ["compare", "-d", "a", "-bp", "b", "--top", "ten"], False)
    typers = pytest.raises(typer.BadParameter, parsed, ["compare", "-d", "a", "-bp", "b", "--top", "ten"], True)
    assert ours.value.format_message() == typers.value.format_message() and "'--top'" in ours.value.format_message()


def test_a_comparison_parses_its_options_without_pydantic(tmp_path):
    """Every value of a full command line is plain: typer's pydantic validator (~0.1 s of
    imports) is never loaded; the command stops at its first check (a missing input)."""
    import subprocess
    import sys

    argv = ["compare", "-d", str(tmp_path / "missing"), "-bp", str(tmp_path / "b"), "--top", "5", "--fail-on",
            "e2e:+3%", "--format", "console", "--jobs", "1", "--skip-steps", "1"]
    code = (f"import sys\nfrom perfcmp import cli\nassert cli.main({argv!r}) == 2\n"
            "print(sorted(m for m in ('pydantic', 'perfcmp.cluster.run', 'perfcmp.cluster.analyse') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_option_help_is_on_the_screen_in_its_panel(capsys, monkeypatch):
    """The plain screen shows what typer's help records hold: each shown option's help words
    (with its [default: ...] / [required]) under the box titled by its panel."""
    text = help_text(capsys, monkeypatch, "compare")
    command = typer.main.get_command(app).get_command(None, "compare")
    ctx = command.make_context("compare", ["-d", "a", "-bp", "b"])
    boxes = {m.group(1): m.group(2) for m in re.finditer(r"╭─ (.+?) ─+╮\n(.*?)╰", text, re.S)}
    for param in command.get_params(ctx):
        box = " ".join(boxes[getattr(param, "rich_help_panel", None) or "Options"].replace("│", " ").split())
        words = " ".join(param.get_help_record(ctx)[1].split())
        assert words.replace("  [", " [") in box, param.name


def test_a_narrow_screen_puts_the_help_under_the_names(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "50")
    assert main(["history", "--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 50
    order = lines.index(next(line for line in lines if "--order" in line))
    assert lines[order].split() == ["│", "--order", "auto|name|given", "│"]
    assert lines[order + 1].startswith("│     auto: recording time")  # the help, 4 spaces in
