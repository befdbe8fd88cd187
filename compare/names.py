"""One name normalisation for every comparison: the user's ``--op_name_map`` first, then, for
two profiles of different vendors only (``vendors.across_vendors``: GPU against NPU, NVIDIA
against AMD), the built-in equivalences of ``op_equivalence.toml``. Within one vendor the
profiler's own names are the keys: ``MatMulV2`` and ``MatMulV3`` stay two kernel types, as
op_statistic.csv counts them.

MindSpore's Graph-mode names carry an instance index per op of a type in a scope
(``Default/MatMul-op1``, ``Gradients/Default/Grad_MatMul/MatMul-op2``) that renumbers when a
layer is added, so the key drops it (``instance_free``): every MatMul of a scope is one key,
and an added layer shows as more calls of that key, not as every later layer shifted by one.

``key(name)`` is what alignment, statistic sheets, module rows, kernel and communication rows
compare; the sheets keep showing each side's own name next to it. ``how(name)`` says which rule
made the key, for the "Match" column.

The same ``[[equivalent]]`` layout (a ``key``, exact ``names``, whole-name ``patterns``) holds
ApiCompare's runtime-call groups across vendors, ``api_equivalence.toml`` (``load_api_map``,
replaced by ``--api-map``): those apply to host runtime calls only, never to the op keys above.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from perfcmp.optionfiles import BOM, OptionFileError, check_literal, is_link_loop, load_toml, parse_json, read_text
from perfcmp.base.errors import UsageError
from perfcmp.base.textmatch import per_unique

MAX_MAP_TEXT = 200  # the peer's limit on one name in --op_name_map
OP_EQUIVALENCE = "op_equivalence.toml"
API_EQUIVALENCE = "api_equivalence.toml"
EQUIVALENCE_FIELDS = frozenset({"key", "names", "patterns"})


# MindSpore's op instance index: "<scope>/<Type>-op<N>" (readers/mindspore.py)
INSTANCE_INDEX = re.compile(r"-op\d+$")


def instance_free(name: str) -> str:
    """``name`` without a MindSpore instance index (``Default/MatMul-op1`` -> ``Default/MatMul``);
    other names unchanged."""
    return INSTANCE_INDEX.sub("", name) if name.endswith(tuple("0123456789")) else name


@dataclass
class Normalizer:
    """Maps raw op / kernel names to comparison keys (cached per distinct name)."""

    user_map: dict[str, str] = field(default_factory=dict)
    exact: dict[str, str] = field(default_factory=dict)
    # whether the built-in equivalences are in (a pair of profiles of different vendors)
    builtin: bool = False
    patterns: list[tuple[re.Pattern, str]] = field(default_factory=list)
    _cache: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)

    def _lookup(self, name: str) -> tuple[str, str]:
        hit = self._cache.get(name)
        if hit is None:
            mapped = self.user_map.get(name)
            how = "mapped" if mapped is not None else "name"
            base = mapped if mapped is not None else instance_free(name)
            equivalent = self.exact.get(base)
            if equivalent is None:
                equivalent = next((key for pattern, key in self.patterns if pattern.fullmatch(base)), None)
            if equivalent is not None and equivalent != base:
                base, how = equivalent, ("mapped" if how == "mapped" else "equivalent")
            hit = self._cache[name] = (base, how)
        return hit

    def key(self, name: str) -> str:
        return self._lookup(name)[0]

    def how(self, name: str) -> str:
        """"name" (used as is), "mapped" (--op_name_map) or "equivalent" (built-in table)."""
        return self._lookup(name)[1]

    def keys(self, names) -> np.ndarray:
        return per_unique(names, lambda n: self.key(str(n)))

    def with_equivalences(self) -> "Normalizer":
        """This normaliser with the built-in equivalences in (itself when they are): what names a
        collective ("allreduce" for ``HcclAllreduce``, ``nccl:all_reduce``, NCCL's kernels), for
        any pair of profiles."""
        if self.builtin:
            return self
        return _add_equivalences(Normalizer(user_map=self.user_map, builtin=True), tomllib.loads(_shipped(OP_EQUIVALENCE)),
                                 OP_EQUIVALENCE)


def load_normalizer(op_name_map: str | None = None, builtin: bool = True) -> Normalizer:
    """The user's map (JSON object text, a JSON file, or the peer's Python dict literal) plus,
    with ``builtin`` (two profiles of different vendors), the built-in equivalences."""
    norm = Normalizer(user_map=parse_op_name_map(op_name_map) if op_name_map else {}, builtin=builtin)
    if builtin:
        _add_equivalences(norm, tomllib.loads(_shipped(OP_EQUIVALENCE)), OP_EQUIVALENCE)
    return norm


def load_api_map(path: str | None = None) -> Normalizer:
    """ApiCompare's runtime-call groups across vendors: the shipped ``api_equivalence.toml``, or
    the user's file of the same layout replacing it (``--api-map``).

    ``key(name)`` is the group of a runtime call's name (the name itself outside every group);
    ``how(name)`` is "equivalent" for a name in a group, "name" otherwise.

    Raises:
        UsageError: the file is missing, unreadable, not TOML, or not ``[[equivalent]]`` tables
            of a key with names and / or patterns (the message names the path and the fault).
    """
    if path is None:
        return _add_equivalences(Normalizer(), tomllib.loads(_shipped(API_EQUIVALENCE)), API_EQUIVALENCE)
    try:
        data = load_toml(path)
    except OSError as exc:
        raise UsageError(f"cannot read API map ({exc.strerror or exc})", path) from None
    except OptionFileError as exc:
        raise UsageError(f"invalid API map, not TOML ({exc}); expected [[equivalent]] tables of key, names and "
                         f"patterns, as in the shipped {API_EQUIVALENCE}", path) from None
    return _add_equivalences(Normalizer(), data, path)


def _shipped(name: str) -> str:
    return resources.files("perfcmp").joinpath(name).read_text("utf-8")


def _add_equivalences(norm: Normalizer, data: dict, source: str) -> Normalizer:
    """Add ``[[equivalent]]`` tables to ``norm``, checking their layout (a file's mistake is a
    one-line ``UsageError`` naming ``source``, never a silently ignored group)."""
    like = OP_EQUIVALENCE if source == OP_EQUIVALENCE else API_EQUIVALENCE

    def fault(message: str) -> UsageError:
        return UsageError(f"invalid {'API map' if like == API_EQUIVALENCE else 'equivalence table'}: {message}; "
                          f"expected [[equivalent]] tables of key, names and patterns, as in the shipped {like}", source)

    extra = sorted(set(data) - {"equivalent"})
    if extra:
        raise fault(f"unknown top-level entry {extra[0]!r}")
    groups = data.get("equivalent")  # `equivalent = []` is allowed: no groups at all
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise fault("no [[equivalent]] tables")
    for number, group in enumerate(groups, 1):
        key = group.get("key")
        where = f"[[equivalent]] #{number}" + (f" ({key})" if isinstance(key, str) else "")
        unknown = sorted(set(group) - EQUIVALENCE_FIELDS)
        if unknown:
            raise fault(f"{where} has an unknown field {unknown[0]!r}")
        if not isinstance(key, str) or not key.strip():
            raise fault(f"{where} has no key (a non-empty string)")
        names, patterns = group.get("names", []), group.get("patterns", [])
        for field_name, values in (("names", names), ("patterns", patterns)):
            if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
                raise fault(f"{where}: {field_name} must be a list of non-empty strings")
        if not names and not patterns:
            raise fault(f"{where} lists no names and no patterns")
        for name in names:
            if norm.exact.get(name, key) != key:
                raise fault(f"{name!r} is in two groups, {norm.exact[name]!r} and {key!r}")
            norm.exact[name] = key
        for pattern in patterns:
            try:
                norm.patterns.append((re.compile(pattern, re.IGNORECASE), key))
            except re.error as exc:
                raise fault(f"{where}: pattern {pattern!r} is no regular expression ({exc})") from None
    return norm


def parse_op_name_map(text: str) -> dict[str, str]:
    """``--op_name_map``: a JSON object, a path to a JSON file, or a Python dict literal."""
    source = text
    path = Path(text)
    if not text.lstrip().removeprefix(BOM).startswith("{") and (path.is_file() or is_link_loop(text)):
        try:
            source = read_text(text)
        except OSError as exc:
            raise UsageError(f"--op_name_map: cannot read {text} ({exc.strerror or exc})") from None
        except OptionFileError as exc:
            raise UsageError(f"--op_name_map: {text}: {exc}") from None
    try:
        value = parse_json(source)
    except OptionFileError as exc:
        raise UsageError(f"--op_name_map: {exc}") from None
    except json.JSONDecodeError:
        try:
            check_literal(source)
            value = ast.literal_eval(source.removeprefix(BOM))
        except OptionFileError as exc:
            raise UsageError(f"--op_name_map: {exc}") from None
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            raise UsageError("--op_name_map must be a JSON object such as '{\"aten::mm\": \"MatMul\"}' "
                             "or the path of a file holding one") from None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise UsageError("--op_name_map must map names (strings) to names (strings)")
    too_long = [k for k, v in value.items() if len(k) > MAX_MAP_TEXT or len(v) > MAX_MAP_TEXT]
    if too_long:
        raise UsageError(f"--op_name_map: names longer than {MAX_MAP_TEXT} characters: {too_long[0][:40]}…")
    return dict(value)
