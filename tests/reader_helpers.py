"""Helpers of the reader tests (importable because pyproject sets pytest's pythonpath to tests/)."""

from perfcmp.readers import load_profile


def read(path, **kwargs):
    """load_profile, then the model's invariants: every profile a test reads must pass check()."""
    profile = load_profile(str(path), **kwargs)
    profile.check()
    return profile


def warning_count(profile, phrase: str) -> int:
    """How often the one warning containing ``phrase`` occurred (0 when there is none)."""
    found = [w.count for w in profile.warnings if phrase in w.message]
    assert len(found) <= 1, profile.warnings
    return found[0] if found else 0
