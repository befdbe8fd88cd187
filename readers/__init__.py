"""Readers: turn a profile path into a ``Profile``.

``load_profile(path)`` decides the format from the path layout and the file's first bytes (never
by decoding a whole file twice) and hands it to the one reader that understands it.
"""

from __future__ import annotations

from perfcmp.readers.detect import detect, load_profile

__all__ = ["detect", "load_profile"]
