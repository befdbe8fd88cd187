"""The ``--help`` screens, drawn in plain text: the usage line, the command's help, its options
in one box per panel, its commands, and its examples.

typer draws these screens with rich, and importing typer's rich helpers (rich.markdown,
markdown_it, pygments, rich.traceback) was most of a ``perfcmp --help``'s CPU. The content is
typer's and click's own, read through their public API: the usage (``get_usage``), each
parameter's help record (names, value, help, ``[default: …]``, ``[required]``), its panel
(``rich_help_panel``) and value name (``display_type_rich``), the commands' help and the
epilog. The boxes follow rich's: the default "Arguments" then "Options" panel first, the other
panels in the order their first parameter appears, then "Commands"; no colour.
"""

from __future__ import annotations

import inspect
import os
import shutil
import textwrap

ARGUMENTS, OPTIONS, COMMANDS = "Arguments", "Options", "Commands"
GAP = 2  # spaces between two columns of a box
NARROW = 20  # the help column's fewest characters; with less room the help goes under the names
INDENT = 4  # of help put under the names


def screen_width() -> int:
    """Characters a line may take: ``TERMINAL_WIDTH`` (typer's setting), else the terminal's
    width (``COLUMNS`` first), else 80; at least 40."""
    given = os.environ.get("TERMINAL_WIDTH", "")
    width = int(given) if given.isdigit() else shutil.get_terminal_size((80, 24)).columns
    return max(width, 40)


def help_screen(command, ctx) -> str:
    """The whole ``--help`` text of a click command or group (``ctx`` its context)."""
    width = screen_width()
    lines = ["", *wrapped(command.get_usage(ctx), width - 1, " "), ""]
    if command.help:
        lines += [*described(command.help, width - 1), ""]
    for title, rows in panels(command, ctx):
        lines += boxed(title, table(rows, width - 4), width)
    commands = listed_commands(command, ctx)
    if commands:
        lines += boxed(COMMANDS, table(commands, width - 4), width)
    if command.epilog:
        lines += ["", *(line for text in command.epilog.splitlines() for line in wrapped(text, width - 1, " ")), ""]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def described(help_text: str, width: int) -> list[str]:
    """A command's help: its first paragraph as one (wrapped) paragraph, then a blank line and
    the other paragraphs, their line breaks kept; text after a ``\\f`` line left out."""
    first, *others = inspect.cleandoc(help_text).partition("\f")[0].split("\n\n")
    lines = wrapped(first if first.startswith("\b") else first.replace("\n", " "), width, " ")
    if others:
        lines += ["", *(line for text in "\n\n".join(others).splitlines() for line in wrapped(text, width, " "))]
    return lines


def panels(command, ctx) -> list[tuple[str, list[list[str]]]]:
    """(title, rows) of each panel of parameters, in rich's order (module docstring); a row is
    [required mark, long names, short names or value name of an argument, value, help]."""
    arguments: dict[str, list] = {ARGUMENTS: []}
    options: dict[str, list] = {OPTIONS: []}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        argument = param.param_type_name == "argument"
        into = arguments if argument else options
        into.setdefault(getattr(param, "rich_help_panel", None) or (ARGUMENTS if argument else OPTIONS), []).append(param)
    out = []
    for title, params in (*arguments.items(), *options.items()):
        rows = [parameter_row(param, ctx) for param in params]
        if rows:
            if not any(row[0] for row in rows):  # no required parameter: no column for the mark
                rows = [row[1:] for row in rows]
            out.append((title, rows))
    return out


def parameter_row(param, ctx) -> list[str]:
    """[``*`` when required, long names, short names (an argument: its name), value, help], the
    help followed by click's bracketed extras (``[default: …]``, ``[required]``) on a line of
    their own."""
    argument = param.param_type_name == "argument"
    names = [*param.opts, *param.secondary_opts]
    long = "" if argument else ",".join(n for n in names if n.startswith("--"))
    if argument:
        short = getattr(param, "display_name_raw", None) or (param.name or "").upper()
    else:
        short = ",".join(n for n in names if not n.startswith("--"))
    value = param.display_type_rich(ctx) if hasattr(param, "display_type_rich") else None
    record = param.get_help_record(ctx)
    text = record[1] if record else ""
    help_part, sep, extras = text.rpartition("  [")
    if sep and text.endswith("]"):
        text = f"{help_part}\n[{extras}" if help_part else f"[{extras}"
    return ["*" if param.required else "", long, short, value or "", text]


def listed_commands(command, ctx) -> list[list[str]]:
    """[name, the first paragraph of its help] of each command a group lists and shows."""
    if not hasattr(command, "list_commands"):
        return []
    rows = []
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            first = inspect.cleandoc(sub.short_help or sub.help or "").split("\n\n")[0]
            rows.append([sub.name or name, first.replace("\b\n", "") if first.startswith("\b") else first.replace("\n", " ")])
    return rows


def table(rows: list[list[str]], width: int) -> list[str]:
    """Rows of cells, the last cell of each the help, laid out in ``width`` characters: each
    column (an empty one left out) as wide as its widest cell, the help wrapped in the rest, or
    under the names when fewer than ``NARROW`` characters are left."""
    columns = [i for i in range(len(rows[0]) - 1) if any(row[i] for row in rows)]
    widths = [max(len(row[i]) for row in rows) for i in columns]
    left = sum(widths) + GAP * len(columns)
    room = width - left
    lines = []
    for row in rows:
        head = "".join(row[i].ljust(w + GAP) for i, w in zip(columns, widths))
        if room >= NARROW:
            text = [line for part in row[-1].splitlines() for line in wrapped(part, room)] or [""]
            lines += [head + text[0], *(" " * left + line for line in text[1:])]
        else:
            lines += [head.rstrip(), *(" " * INDENT + line for part in row[-1].splitlines()
                                       for line in wrapped(part, width - INDENT))]
    return lines


def boxed(title: str, body: list[str], width: int) -> list[str]:
    """``body`` in a box ``width`` characters wide, ``title`` in its top edge."""
    inner = width - 4
    return [f"╭─ {title} " + "─" * max(width - len(title) - 5, 0) + "╮",
            *(f"│ {line.ljust(inner)} │" for line in body),
            "╰" + "─" * (width - 2) + "╯"]


def wrapped(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` (one line) wrapped into lines of at most ``width`` characters, each starting with
    ``indent`` and the text's own leading spaces; words are never cut (a longer one overflows)."""
    lead = indent + text[:len(text) - len(text.lstrip())]
    lines = textwrap.wrap(text.strip(), max(width - len(lead), 1), break_long_words=False, break_on_hyphens=False)
    return [lead + line for line in lines] or [""]
