"""What the commands share: the option-help classes (one spelling shown per option), value
completion, the help texts and panels, and turning ``--format`` / ``--per-step`` values into
options. Light on purpose: ``perfcmp --help`` imports it, and nothing of the analysis."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args, get_origin

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from perfcmp.base.errors import UsageError
from perfcmp.choices import FORMATS, HISTORY_FORMATS

INPUTS, OUTPUTS, DIMENSION_PANEL, GATES = "Inputs", "Outputs", "Dimensions", "Gates & verdict"


def quiet_flags(params) -> None:
    """A flag takes no value, so its help shows none (typer's default is ``<bool>``); and a flag
    not given is False rather than None (``--help``, ``--install-completion``), which typer takes
    as it is instead of loading its value converter (pydantic, ~0.1 s of a ``--help``)."""
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag:
            if param.metavar is None:
                param.metavar = ""
            if param.default is None:
                param.default = False


# A value typer would take as this int for certain: decimal, no leading zero, within 64 bits.
PLAIN_INTEGER = re.compile(r"-?(0|[1-9][0-9]{0,17})")


class PlainValues:
    """How an option or argument of type str, int or a list of them takes its value: as typer
    takes it, without typer's pydantic validator, whose import is ~0.1 s of CPU (a tenth of a
    comparison of two small exports). A value not certainly plain (an integer such as ``07`` or
    ``1e3``, a value of another type) goes to typer's own validator, so it is taken, or refused
    with the message, exactly as typer would."""

    def __init__(self, leaf: type) -> None:
        self.leaf = leaf

    def coerce(self, value, param, ctx):
        """``value`` as typer's runtime parameter gives it: None (or () for a repeatable
        option), the leaf value, or a list of them."""
        multiple = param.multiple or param.nargs == -1
        if value is None:
            return () if multiple else None
        items = (value if isinstance(value, (list, tuple)) else None) if multiple else (value,)
        if items is not None and all(self.plain(item) for item in items):
            taken = [self.leaf(item) for item in items]
            return taken if multiple else taken[0]
        param._runtime_param = None  # typer builds and keeps its own validator from here on
        return param.get_runtime_param().coerce(value, param=param, ctx=ctx)

    def plain(self, item) -> bool:
        if self.leaf is str:
            return type(item) is str
        return type(item) is int or (type(item) is str and PLAIN_INTEGER.fullmatch(item) is not None)


def plain_values(params) -> None:
    """Give each str / int parameter (or list of them) without constraints ``PlainValues``, in the
    place where typer keeps the validator it builds on first use (``_runtime_param``; a typer that
    keeps none there never reads it, and validates as before)."""
    for param in params:
        described = getattr(param, "type_descriptor", None)
        if described is None or vars(param).get("_runtime_param", False) is not None:
            continue
        annotation, info = described.annotation, described.parameter_info
        leaf = get_args(annotation)[0] if get_origin(annotation) is list else annotation
        constrained = (info.parser, info.click_type if hasattr(info, "click_type") else None, info.min, info.max,
                       described.file_annotation)
        if leaf in (str, int) and all(c is None for c in constrained) and not described.is_path:
            param._runtime_param = PlainValues(leaf)


class PlainHelp:
    """What commands and groups share: flags show no value, and the help screen is drawn in plain
    text (``perfcmp.commands.helpscreen``), not by typer's rich helpers."""

    def get_params(self, ctx):
        params = super().get_params(ctx)
        quiet_flags(params)
        return params

    def format_help(self, ctx, formatter) -> None:
        """The help screen in plain text (``perfcmp.commands.helpscreen``), not typer's rich one."""
        from perfcmp.commands.helpscreen import help_screen

        formatter.write(help_screen(self, ctx))


class OneSpelling(PlainHelp, TyperCommand):
    """A command whose ``--help`` names each option once: its short name and its first long
    name. The other long names (the peer's ``--profiling_path`` next to ``--profiling-path``)
    are hidden there, and in shell completion, but still parse. Plain values are taken without
    pydantic (``plain_values``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        plain_values(self.params)
        self.aliases: dict[str, list[str]] = {}
        for param in self.params:
            long = [o for o in param.opts if o.startswith("--")] if isinstance(param, TyperOption) else []
            if len(long) > 1:
                self.aliases[param.name] = long[1:]
                param.opts = [o for o in param.opts if o not in long[1:]]

    def make_parser(self, ctx):
        params = [p for p in self.get_params(ctx) if p.name in self.aliases]
        shown = [p.opts for p in params]
        for p in params:  # the parser learns every spelling; help and completion see only the shown ones
            p.opts = p.opts + self.aliases[p.name]
        try:
            return super().make_parser(ctx)
        finally:
            for p, opts in zip(params, shown):
                p.opts = opts


class Group(PlainHelp, TyperGroup):
    """The command groups: flags (``--version``, ``--install-completion``) show no value either,
    and the help screen is drawn in plain text as a command's is."""


# --- shell completion of option values (perfcmp --install-completion) -----------------------------


def complete_formats(ctx: typer.Context, incomplete: str) -> list[str]:
    """``--format json,m<TAB>`` -> ``json,md``: the formats of this command not given yet."""
    allowed = HISTORY_FORMATS if ctx.info_name == "history" else FORMATS
    done, _, last = incomplete.rpartition(",")
    given = set(done.split(",")) if done else set()
    return [f"{done}," * bool(done) + f for f in allowed if f.startswith(last) and f not in given]


def complete_npu_source(incomplete: str) -> list[str]:
    return [source for source in ("text", "db") if source.startswith(incomplete)]


def complete_baseline(ctx: typer.Context, incomplete: str) -> list[str]:
    """The baselines stored in ``--dir`` (or the default store) whose names start so."""
    from perfcmp.golden import DEFAULT_DIR, NAME

    root = Path(ctx.params.get("directory") or DEFAULT_DIR)
    try:
        names = sorted(p.stem for p in root.glob("*.json") if NAME.fullmatch(p.stem))
    except OSError:  # an unreadable store completes nothing rather than printing a traceback into the shell
        return []
    return [name for name in names if name.startswith(incomplete)]


OUTPUT_HELP = "A directory (made when missing; default: the current one), or NAME.xlsx, which names every file " \
    "(NAME.json, NAME.md); - sends the one --format json, md or html to stdout."
FORMAT_HELP = f"Outputs, comma-separated, of: {', '.join(FORMATS)}."
TOP_HELP = "Rows per dimension in the console's top regressions and improvements."
QUIET_HELP = "Console: only the headline, the verdict and the gates."
POLICY_HELP = "A TOML policy file: fail_on gates, require_verdict, thresholds."


def scope_of(per_step: bool, total: bool) -> str:
    if per_step and total:
        raise UsageError("--per-step and --total exclude each other; give one (or neither: per step when the step "
                         "counts differ)")
    return "per step" if per_step else "total" if total else "auto"


def parse_formats(text: str) -> tuple[str, ...]:
    """``--format console, xlsx`` -> ("console", "xlsx"); checked by CompareOptions. A list
    naming no format at all (``--format ''``) is a usage error: a run that writes nothing."""
    formats = tuple(f.strip() for f in text.split(",") if f.strip())
    if not formats:
        raise UsageError(f"--format {text!r} names no output format; expected a comma-separated list such as "
                         "console,xlsx (the formats are listed by --help)")
    return formats
