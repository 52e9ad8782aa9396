"""The memory guard: refuse a training run that cannot fit, before allocating it.

CRF++ and Wapiti give every observation one weight per label (unigram
patterns) or per label pair (bigram patterns), so a bigram pattern over word
trigrams asks for observations x L^2 weights, and the process dies hours
later in swap. crfkit counts the observations first (a second or two), then
estimates what training will hold and stops with the estimate, the patterns
responsible and what to do, if it exceeds ``--max-memory`` (default: the
memory the machine has available).

What a weight costs: the float64 vectors training keeps (weights, gradient,
empirical counts, starting point, and the optimiser's: 2 x history for
L-BFGS) plus its label index; plus the per-block gradient buffers of the
kernels. By default only (observation, label) combinations seen in training
get a weight, so a pattern can add at most as many features as it has
occurrences, and the estimate uses that bound; ``--all-features`` takes
every combination, as Wapiti and CRF++ do.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from crfkit.config import MAX_BLOCK_BUFFER_BYTES, N_BLOCKS
from crfkit.errors import UsageError
from crfkit.patterns import Pattern

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", re.IGNORECASE)
INDEX_BYTES = 8  # u_lab (int32), or b_prev + b_cur (2 x int32)


def parse_size(text: str) -> int:
    """Bytes in ``"512M"``, ``"8G"``, ``"1.5GB"``, ``"2GiB"`` or a plain number of bytes."""
    m = _SIZE.fullmatch(text)
    if m is None:
        raise UsageError(f"--max-memory: cannot read {text!r} as a size (e.g. 512M, 8G)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def format_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def available_memory() -> int:
    """What the machine can give without swapping: MemAvailable, else free physical pages."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 1 << 62  # unknown: do not guess a limit


@dataclass
class PatternCost:
    pattern: Pattern
    observations: int
    features: int


@dataclass
class Estimate:
    """Training's expected footprint, and each pattern's share of the features."""

    total_bytes: int
    n_features: int
    patterns: list[PatternCost]


@dataclass
class MemoryBudget:
    """The limit in bytes, and how many weight-sized float64 vectors the optimiser keeps."""

    limit: int
    vectors: int


def estimate_training(patterns: list[Pattern], observations: np.ndarray, unigram: np.ndarray,
                      bigram: np.ndarray, n_labels: int, *, n_tokens: int, n_sequences: int,
                      has_trans: bool, all_features: bool, vectors: int,
                      data_bytes: int) -> Estimate:
    """Bytes training will hold, from the observation count of each (listed) pattern.

    ``unigram``/``bigram`` flag which kinds of weights each pattern gets.
    ``vectors``: float64 vectors of the weights' length the optimiser keeps.
    ``data_bytes``: the encoded corpus, already allocated.
    """
    L = n_labels
    costs = []
    for pattern, n_obs, uni, bi in zip(patterns, observations.tolist(), unigram, bigram,
                                       strict=True):
        features = 0
        if uni:
            features += n_obs * L if all_features else min(n_obs * L, n_tokens)
        if bi:
            pairs = n_obs * L * L
            features += pairs if all_features else min(pairs, n_tokens - n_sequences)
        costs.append(PatternCost(pattern, n_obs, features))
    n_features = sum(c.features for c in costs) + (L * L if has_trans else 0)
    per_weight = 8 * vectors + INDEX_BYTES
    blocks = min(N_BLOCKS * 8 * n_features, MAX_BLOCK_BUFFER_BYTES)
    return Estimate(n_features * per_weight + blocks + data_bytes, n_features, costs)


def check(estimate: Estimate, limit: int, *, all_features: bool, n_labels: int) -> None:
    """Raise a :class:`UsageError` naming the costliest patterns when over ``limit``."""
    if estimate.total_bytes <= limit:
        return
    worst = sorted(estimate.patterns, key=lambda c: -c.features)[:3]
    share = "; ".join(
        f"{c.pattern.text!r} (line {c.pattern.line}): {c.observations:,} observations -> "
        f"{c.features:,} features" for c in worst if c.features)
    advice = ["raise -f/--cutoff to drop rare observations"]
    if any(c.pattern.has_bigram and not c.pattern.is_constant for c in worst):
        advice.append(f"make the bigram patterns u: patterns ({n_labels} instead of "
                      f"{n_labels ** 2} weights per observation)")
    if all_features:
        advice.append("drop --all-features")
    advice.append("or raise --max-memory if the machine really has the memory")
    raise UsageError(
        f"training would need about {format_size(estimate.total_bytes)} for "
        f"{estimate.n_features:,} features, over the limit of {format_size(limit)}; "
        f"largest: {share}. To fit: {', '.join(advice)}")


def return_large_frees_to_the_os() -> None:
    """glibc: serve every block over 128 KB by mmap, so freeing it gives the pages back.

    By default glibc raises that threshold as large blocks are freed, after
    which the numpy and Numba temporaries of feature extraction land on the
    heap and stay in the process's footprint. A no-op elsewhere.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD (fixing it stops the adjustment)
    except (OSError, AttributeError):
        pass
