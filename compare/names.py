"""One name normalisation for every comparison: the user's ``--op_name_map`` first, then the
built-in GPU <-> NPU equivalences of ``op_equivalence.toml``.

``key(name)`` is what alignment, statistic sheets, module rows, kernel and communication rows
compare; the sheets keep showing each side's own name next to it. ``how(name)`` says which rule
made the key, for the "Match" column.
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

from perfcmp.readers.errors import UsageError
from perfcmp.readers.textmatch import per_unique

MAX_MAP_TEXT = 200  # the peer's limit on one name in --op_name_map


@dataclass
class Normalizer:
    """Maps raw op / kernel names to comparison keys (cached per distinct name)."""

    user_map: dict[str, str] = field(default_factory=dict)
    exact: dict[str, str] = field(default_factory=dict)
    patterns: list[tuple[re.Pattern, str]] = field(default_factory=list)
    _cache: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)

    def _lookup(self, name: str) -> tuple[str, str]:
        hit = self._cache.get(name)
        if hit is None:
            mapped = self.user_map.get(name)
            how = "mapped" if mapped is not None else "name"
            base = mapped if mapped is not None else name
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


def load_normalizer(op_name_map: str | None = None, builtin: bool = True) -> Normalizer:
    """The user's map (JSON object text, a JSON file, or the peer's Python dict literal) plus
    the built-in equivalences."""
    norm = Normalizer(user_map=parse_op_name_map(op_name_map) if op_name_map else {})
    if builtin:
        data = tomllib.loads(resources.files("perfcmp").joinpath("op_equivalence.toml").read_text("utf-8"))
        for entry in data["equivalent"]:
            for name in entry.get("names", []):
                norm.exact.setdefault(name, entry["key"])
            for pattern in entry.get("patterns", []):
                norm.patterns.append((re.compile(pattern, re.IGNORECASE), entry["key"]))
    return norm


def parse_op_name_map(text: str) -> dict[str, str]:
    """``--op_name_map``: a JSON object, a path to a JSON file, or a Python dict literal."""
    source = text
    path = Path(text)
    if not text.lstrip().startswith("{") and path.is_file():
        try:
            source = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--op_name_map: cannot read {text} ({exc.strerror or exc})") from None
    try:
        value = json.loads(source)
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(source)
        except (ValueError, SyntaxError):
            raise UsageError("--op_name_map must be a JSON object such as '{\"aten::mm\": \"MatMul\"}' "
                             "or the path of a file holding one") from None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise UsageError("--op_name_map must map names (strings) to names (strings)")
    too_long = [k for k, v in value.items() if len(k) > MAX_MAP_TEXT or len(v) > MAX_MAP_TEXT]
    if too_long:
        raise UsageError(f"--op_name_map: names longer than {MAX_MAP_TEXT} characters: {too_long[0][:40]}…")
    return dict(value)
