"""The user's option files read alike and within bounds: ``--policy``, ``--categories`` and
``--api-map`` (TOML), ``--op_name_map`` (JSON or a Python dict literal, text or a file).

Every reader takes the file through ``read_text``: a UTF-8 byte-order mark (Windows editors write
one) is skipped, a symbolic link loop is named as one (``open`` and ``Path.is_file`` would say "too
many levels of symbolic links" or "no such file"), and ``parse_toml`` / ``parse_json`` refuse a
document nested deeper than ``MAX_DEPTH`` levels: option files are two or three levels deep, and a
parser recursing 10,000 levels would end in a ``RecursionError``. Problems are ``OSError`` (cannot
read) or ``OptionFileError`` (cannot use), which each caller words as its one-line usage error.
"""

from __future__ import annotations

import errno
import json
import os
import tomllib

MAX_DEPTH = 32
BOM = "\ufeff"
LOOP = "a symbolic link loop (a link that leads back to itself)"


class OptionFileError(ValueError):
    """An option file that is not UTF-8, not valid TOML / JSON, or nested too deep."""


def is_link_loop(path: str) -> bool:
    """Whether ``path`` is (or passes through) a symbolic link loop."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    except ValueError:  # a NUL in the text: no path at all
        return False
    return False


def read_text(path: str) -> str:
    """The file's text, a leading BOM skipped. Raises ``OSError`` (a link loop with ``LOOP`` as
    its strerror) or ``OptionFileError`` (not UTF-8)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, LOOP, path) from None
        raise
    try:
        return data.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as exc:
        raise OptionFileError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def parse_toml(text: str) -> dict:
    """``text`` as TOML, at most ``MAX_DEPTH`` levels deep (``OptionFileError`` otherwise)."""
    _check_brackets(text)
    try:
        document = tomllib.loads(text.removeprefix(BOM))
    except tomllib.TOMLDecodeError as exc:
        raise OptionFileError(str(exc)) from None
    except RecursionError:  # beyond what the bracket count sees (dotted keys): the same answer
        raise OptionFileError(f"nested deeper than {MAX_DEPTH} levels") from None
    check_depth(document)
    return document


def load_toml(path: str) -> dict:
    """``read_text`` then ``parse_toml``."""
    return parse_toml(read_text(path))


def parse_json(text: str) -> object:
    """``text`` as JSON, at most ``MAX_DEPTH`` levels deep (``json.JSONDecodeError`` for text
    that is no JSON, ``OptionFileError`` when too deep)."""
    _check_brackets(text)
    try:
        value = json.loads(text.removeprefix(BOM))
    except RecursionError:
        raise OptionFileError(f"nested deeper than {MAX_DEPTH} levels") from None
    check_depth(value)
    return value


def _check_brackets(text: str, opening: str = "[{", closing: str = "]}") -> None:
    """Refuse text whose brackets and braces open more than ``MAX_DEPTH`` deep before parsing it
    (a parser would recurse once per level). Brackets inside strings count too: an over-count
    only matters for a file holding > ``MAX_DEPTH`` of them open in a row, which no option file
    does."""
    depth = deepest = 0
    for char in text:
        if char in opening:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    raise OptionFileError(f"nested deeper than {MAX_DEPTH} levels")
        elif char in closing and depth:
            depth -= 1


def check_literal(text: str) -> None:
    """The bracket bound for a Python literal (``ast.literal_eval`` recurses per level, on
    parentheses too)."""
    _check_brackets(text, "[{(", "]})")


def check_depth(value: object) -> None:
    """``OptionFileError`` when ``value`` (parsed builtins) nests deeper than ``MAX_DEPTH``;
    an iterative walk."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > MAX_DEPTH:
                raise OptionFileError(f"nested deeper than {MAX_DEPTH} levels")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))
