"""The one key rule of each dimension, shared by the sheets, the samples, the verdicts and the gates.

A verdict row is named ``<dimension>:<key>`` (``op:aten::linear``, ``comm:allreduce``,
``overall:computing.matmul``); the detail sheet row it judges carries the same key, so joining
them is an equality, never a second derivation that could drift (as ``--use_input_shape`` once
did: sheet rows keyed by name and shapes, samples by name alone).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfcmp.base.textmatch import per_unique, texts

OP, KERNEL, COMM, OVERALL, MEMORY = "op", "kernel", "comm", "overall", "memory"


def row_name(dimension: str, key: str) -> str:
    """The verdict row of ``key`` in ``dimension`` ("op", "kernel", "comm", "overall", "memory")."""
    return f"{dimension}:{key}"


def op_keys(ops: pd.DataFrame, use_shape: bool) -> np.ndarray:
    """The comparison key of each op (``SideDetails.ops`` rows): its normalised name, and with
    ``--use_input_shape`` its input shapes too, written the same for either device
    (``shape_texts``): ``aten::linear [16,256,1024]×[4096,1024]``."""
    keys = ops["key"].to_numpy().astype(object)
    if not use_shape:
        return keys
    shapes = shape_texts(ops["input_shapes"].to_numpy())
    return np.array([f"{k} [{s}]" if s else k for k, s in zip(keys.tolist(), shapes.tolist())], dtype=object)


SHAPE_JOIN = "×"


def shape_texts(values) -> np.ndarray:
    """Input shapes as one text for either device (once per distinct value): a GPU op's
    ``[[16,256,1024],[3072,1024]]`` and an NPU op's ``"16,256,1024;\\r\\n3072,1024"`` both give
    ``[16,256,1024]×[3072,1024]``; trailing scalars (empty shapes) are dropped; "" for none."""
    return per_unique(texts(values), _shape_text)


def _shape_text(raw: str) -> str:
    # torch_npu writes the separators as escaped text ("16;\\r\\n1024"), sometimes quoted
    text = "".join(raw.replace("\\r", "").replace("\\n", "").split()).strip('"')
    if text.startswith("[") and text.endswith("]"):
        parts = _top_level(text[1:-1], ",")
    else:
        parts = ["[" + p + "]" for p in text.split(";")]
    while parts and parts[-1] in ("[]", ""):
        parts.pop()
    return SHAPE_JOIN.join(parts)


def _top_level(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts if text else []


def table_keys(prefix: str, fields: tuple[str, ...], columns: list[str], rows: list[list]) -> list[str | None]:
    """The verdict row (``<prefix>:<key>``) each row of a keyed table stands for: its key is the
    first non-empty of ``fields`` (``Dimension.key_fields``); None: no key (e.g. a
    communication task row, "|")."""
    at = [columns.index(f) for f in fields if f in columns]
    keys = []
    for row in rows:
        key = next((row[i] for i in at if isinstance(row[i], str) and row[i] not in ("", "|")), None)
        keys.append(row_name(prefix, key) if key is not None else None)
    return keys
