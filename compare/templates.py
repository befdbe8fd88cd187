"""Load and validate the workbook layout (``report_templates/sheets.toml``) into specs."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from perfcmp.base.errors import PerfcmpError

SIDES = ("base", "comparison", None)
# [style] keys the renderer reads (checked here, so a broken layout fails with a clear message)
STYLE_KEYS = ("font_name", "font_size", "base_banner", "comparison_banner", "base_header", "comparison_header", "worse",
              "level0_fill", "level1_fill", "level1_plain_under", "verdict_fills", "min_width", "max_width",
              "line_height")


class TemplateError(PerfcmpError):
    """The shipped layout is broken: a packaging or editing mistake, reported clearly."""


@dataclass(frozen=True)
class ColumnSpec:
    """One column; its width is not declared but fitted to the header and the values shown."""

    field: str
    header: str
    format: str
    side: str | None = None
    worse_above_one: bool = False
    optional: bool = False  # left out of the sheet when every row's cell is empty
    verdict_fill: bool = False  # the cell holds a verdict: filled as [style] verdict_fills says


@dataclass(frozen=True)
class SheetSpec:
    name: str
    source: str
    columns: tuple[ColumnSpec, ...]
    indent_field: str | None = None


@dataclass(frozen=True)
class Layout:
    sheets: tuple[SheetSpec, ...]
    formats: dict[str, dict]
    style: dict


def shipped_layout_text() -> str:
    """The text of the shipped ``report_templates/sheets.toml``."""
    return resources.files("perfcmp.report_templates").joinpath("sheets.toml").read_text("utf-8")


def load_layout(text: str | None = None) -> Layout:
    """The workbook layout from ``text`` (a sheets.toml; None: the shipped one), validated."""
    text = shipped_layout_text() if text is None else text
    try:
        data = tomllib.loads(text)
        formats = data["formats"]
        sheets = tuple(_sheet(s, formats) for s in data["sheets"])
        missing = [key for key in STYLE_KEYS if key not in data["style"]]
        if missing:
            raise TemplateError(f"report_templates/sheets.toml: [style] lacks {', '.join(missing)}")
        return Layout(sheets=sheets, formats=formats, style=data["style"])
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise TemplateError(f"report_templates/sheets.toml is invalid ({exc.__class__.__name__}: {exc})") from None


def _sheet(data: dict, formats: dict) -> SheetSpec:
    columns = []
    for col in data["columns"]:
        spec = ColumnSpec(**col)
        if spec.format not in formats:
            raise TemplateError(f"sheet {data['name']!r} column {spec.header!r}: unknown format {spec.format!r}; "
                                f"known: {', '.join(sorted(formats))}")
        if spec.side not in SIDES:
            raise TemplateError(f"sheet {data['name']!r} column {spec.header!r}: side must be base or comparison")
        columns.append(spec)
    return SheetSpec(name=data["name"], source=data["source"], columns=tuple(columns),
                     indent_field=data.get("indent_field"))
