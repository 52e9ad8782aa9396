"""The pattern files and sample data installed with crfkit, found by name.

They live inside the package (``crfkit/patterns/*.pat``, ``crfkit/samples/``) so that a
wheel carries them; a checkout links ``patterns/`` and ``data/`` at its root to the same
folders, so ``-p patterns/chunking.pat`` works there unchanged, and ``-p chunking`` works
everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

PATTERNS_DIR = Path(__file__).resolve().parents[1] / "patterns"
SAMPLES_DIR = Path(__file__).resolve().parents[1] / "samples"


def pattern_file(name: str | None) -> str | None:
    """``name`` itself if it is an existing file (or None, or a path with a folder in it);
    otherwise the shipped pattern file of that name (``chunking`` or ``chunking.pat``), or
    ``name`` unchanged if there is none (the caller reports the missing file)."""
    if name is None or os.path.exists(name) or os.sep in name or "/" in name:
        return name
    for candidate in (PATTERNS_DIR / name, PATTERNS_DIR / f"{name}.pat"):
        if candidate.is_file():
            return str(candidate)
    return name


def shipped_patterns() -> list[tuple[str, Path, str]]:
    """(name, path, first comment line) of every shipped pattern file, by name."""
    found = []
    for path in sorted(PATTERNS_DIR.glob("*.pat")):
        with open(path, encoding="utf-8") as handle:
            first = handle.readline().strip()
        found.append((path.stem, path, first.lstrip("# ") if first.startswith("#") else ""))
    return found
