"""The one error hierarchy of perfcmp, mapped to documented exit codes.

It lives in ``perfcmp.readers`` because readers raise these errors and must not import the
package root; the rest of perfcmp imports it from here too.

Exit codes: 0 ran and no gate failed; 1 a regression failed the gate policy; 2 usage or input
error; 3 the pair is not comparable (or the verdict inconclusive where the policy demands one).
"""

from __future__ import annotations

import sys


class PerfcmpError(Exception):
    """A failure caused by the user or the input, reported as one line without traceback."""

    exit_code = 2

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path

    def __reduce__(self):  # keep the path when an error crosses a process boundary
        return (type(self), (self.message, self.path))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class InputError(PerfcmpError):
    """A profile path that is missing, unreadable, malformed or of an unknown format."""


class UsageError(PerfcmpError):
    """Options that are inconsistent or out of range (an unknown step, a bad value)."""


class NotComparableError(PerfcmpError):
    """The two profiles cannot be compared meaningfully."""

    exit_code = 3


def max_depth() -> int:
    """How deep a JSON document may nest before decoding it fails (msgspec and json recurse per
    level, so the interpreter's recursion limit bounds it; the frames below decoding take a few)."""
    return sys.getrecursionlimit() - 100
