"""Readers: turn a profile path into a ``Profile``.

``load_profile(path)`` decides the format from the path layout and the file's first bytes (never
by decoding a whole file twice) and hands it to the one reader that understands it. The formats
are declared once each in ``readers.formats`` (how each is sniffed, read, split into ranks, where
its links and step reference are, its memory estimate): the rest of perfcmp asks that registry
and knows no file name, magic number or table of its own (docs/formats/README.md).

The readers (and pandas with them) are imported when ``load_profile`` is first asked for, not
with the package: ``perfcmp.base.errors`` is imported by every command, ``--version`` too.
"""

from __future__ import annotations

import importlib

__all__ = ["load_profile"]


def __getattr__(name: str):
    if name == "load_profile":
        return importlib.import_module("perfcmp.readers.detect").load_profile
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
