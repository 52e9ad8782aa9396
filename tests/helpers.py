"""Assertions shared by the test files (imported as ``from tests.helpers import ...``)."""

from __future__ import annotations


def one_error_line(result, *needles: str) -> str:
    """The failure is exactly one stderr line that names the place; no traceback."""
    assert result.exit_code != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output + result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]
