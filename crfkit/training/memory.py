"""The memory guard: refuse a training run that cannot fit, before allocating it.

CRF++ and Wapiti give every observation one weight per label (unigram
patterns) or per label pair (bigram patterns), so a bigram pattern over word
trigrams asks for observations x L^2 weights, and the process dies hours
later in swap. crfkit counts the features first, estimates the peak resident
size of the whole process, and stops with the estimate, the patterns
responsible and what to do if it exceeds ``--max-memory`` (default: the
memory the machine has available).

The count is exact. By default only the (observation, label) and
(observation, label pair) combinations seen in training get a weight; the
feature space is built from exactly those (:func:`crfkit.features.intern.observed_pairs`),
so the guard reads the built space, once the corpus rows are freed and
right before the optimiser allocates its vectors (``train._check_memory``):
no second count. Encoding is linear in the corpus, so it needs no guard of
its own. ``--all-features`` (every combination, as Wapiti and CRF++) counts
observations x L (x L^2) and is checked before the dense space is built, so
an explosive pattern file is refused within seconds.

The estimate is max(peak since training began, resident now + what training
adds). Resident now is measured: the interpreter, the numpy and Numba
runtimes, the encoded corpus, string tables, vocabulary and feature space.
Training adds, per weight, the optimiser's float64 vectors (L-BFGS: 2 x
(history + 1) rows for its pairs, x and g, the direction, which the returned
weights reuse, and the exponentiated weights) and one gradient row per thread,
plus its kernels' code and per-thread buffers. The peak counts because encoding can
need more than training (a large corpus, few features).

The estimate is checked against measured peaks on the shipped corpora and pattern files
(the manual's benchmarks page, *The memory guard's estimate*).

A cold Numba cache compiles the kernels during the first run, which takes
about 130 MB more at its peak; the estimate leaves that out.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

import numpy as np

from crfkit.config import MAX_BLOCK_BUFFER_BYTES
from crfkit.errors import UsageError
from crfkit.features.patterns import Pattern
from crfkit.space import FeatureSpace
from crfkit.structures.base import PatternCost

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", re.IGNORECASE)
INDEX_BYTES = 8  # u_lab (int32), or b_prev + b_cur (2 x int32)
# What training adds besides its vectors: the code of the training kernels
# (loaded from Numba's cache), and per thread the lattice and dense-row buffers.
RUNTIME_BYTES = 4 << 20
THREAD_BYTES = 2 << 20


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
class Estimate:
    """The process's expected peak footprint, and each pattern's share of the features."""

    total_bytes: int
    n_features: int
    patterns: list[PatternCost]
    fixed_bytes: int = 0  # of the total, the process before any data: no option reduces it


@dataclass
class MemoryBudget:
    """The limit in bytes, and what training allocates per weight once the space exists.

    ``vectors``: float64 vectors of the weights' length the trainer allocates
    (the optimiser's, and the development monitor's copies). ``gradient_rows``:
    per-block gradient buffers held at once (one per thread; l-bfgs only).
    ``peak_before``: the process's peak when this training began; a peak no
    higher than that was another job's, and does not count.
    """

    limit: int
    vectors: int
    gradient_rows: int = 0
    peak_before: int = 0


def process_memory() -> tuple[int, int]:
    """(resident now, peak so far) of this process in bytes; 0 where the system cannot say.

    Linux: VmRSS and VmHWM of ``/proc/self/status``. Not ``getrusage``: its
    peak starts from the parent's size at fork (a large parent would inflate
    it). Elsewhere ``getrusage``'s peak stands in for both (an overestimate).
    """
    found = {}
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    found[line[:5]] = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if len(found) == 2:
        return found["VmRSS"], max(found["VmRSS"], found["VmHWM"])
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    except (ImportError, OSError):
        return 0, 0
    peak *= 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KB elsewhere
    return peak, peak


def seen_costs(patterns: list[Pattern], listed: list[int], vocab_pattern: np.ndarray,
               space: FeatureSpace, extra: np.ndarray | None = None) -> list[PatternCost]:
    """Each listed pattern's observations and features in a built feature space.

    ``vocab_pattern``: the index (in ``patterns``) of every observation's pattern;
    ``extra``: features per observation a structure adds to the chain's (None: none).
    """
    per_obs = np.diff(space.u_ptr) + np.diff(space.b_ptr)
    if extra is not None:
        per_obs = per_obs + extra
    observations = np.bincount(vocab_pattern, minlength=len(patterns))
    features = np.bincount(vocab_pattern, weights=per_obs, minlength=len(patterns))
    return [PatternCost(patterns[i], int(observations[i]), int(features[i])) for i in listed]


def dense_costs(patterns: list[Pattern], observations: np.ndarray, unigram: np.ndarray,
                bigram: np.ndarray, n_labels: int,
                extra: np.ndarray | None = None) -> list[PatternCost]:
    """Features of ``--all-features``, exact before they are built: every label for each
    observation of a unigram pattern, every label pair for each of a bigram pattern, and
    ``extra[i]`` more for each of pattern i (what a structure adds: second order's label
    trigrams)."""
    L = n_labels
    more = np.zeros(len(patterns), dtype=np.int64) if extra is None else extra
    return [PatternCost(p, n, n * (L * uni + L * L * bi + int(e)))
            for p, n, uni, bi, e in zip(patterns, observations.tolist(), unigram.tolist(),
                                        bigram.tolist(), more.tolist(), strict=True)]


def estimate_training(costs: list[PatternCost], n_labels: int, has_trans: bool,
                      budget: MemoryBudget, *, unbuilt_bytes_per_weight: int = 0,
                      data_bytes: int = 0) -> Estimate:
    """The peak resident size of this process once training has started.

    What the process holds now (interpreter, numpy and Numba runtimes, the
    encoded corpus, string tables, vocabulary, feature space) is measured;
    what training will add is counted: per weight, the budget's float64
    vectors and gradient rows, plus ``unbuilt_bytes_per_weight`` for a
    feature space not built yet (its index and empirical counts). The peak
    since training began counts too: encoding may need more than training.
    ``data_bytes``: what the encoded corpus and feature space hold now (0: not
    counted); with it, the estimate tells the fixed part (interpreter, numpy,
    Numba and its compiled code, the pattern and string tables) from the data's.
    """
    n_features = sum(c.features for c in costs) + (n_labels ** 2 if has_trans else 0)
    rows = min(budget.gradient_rows, max(1, MAX_BLOCK_BUFFER_BYTES // max(1, 8 * n_features)))
    per_weight = 8 * (budget.vectors + rows) + unbuilt_bytes_per_weight
    threads = max(1, budget.gradient_rows)
    now, peak = process_memory()
    if peak <= budget.peak_before:
        peak = 0
    coming = n_features * per_weight + RUNTIME_BYTES + threads * THREAD_BYTES
    total = max(peak, now + coming)
    fixed = max(0, total - data_bytes - coming) if data_bytes else 0
    return Estimate(total, n_features, costs, fixed)


def array_bytes(*holders: object) -> int:
    """Bytes of the numpy arrays the objects hold as attributes (one level deep)."""
    return sum(value.nbytes for holder in holders for value in vars(holder).values()
               if isinstance(value, np.ndarray))


def check(estimate: Estimate, limit: int, *, dense_option: str | None,
          n_labels: int) -> None:
    """Raise a :class:`UsageError` naming the costliest patterns when over ``limit``;
    ``dense_option``: the option that asked for unseen features (advised to drop)."""
    if estimate.total_bytes <= limit:
        return
    worst = sorted(estimate.patterns, key=lambda c: -c.features)[:3]
    share = "; ".join(
        f"{c.pattern.text!r} (line {c.pattern.line}): {c.observations:,} observations -> "
        f"{c.features:,} features" for c in worst if c.features)
    raise UsageError(
        f"training would need about {format_size(estimate.total_bytes)} for "
        f"{estimate.n_features:,} features, over the limit of {format_size(limit)}"
        f"{_split_of(estimate)}; largest: {share}. To fit: "
        f"{_advice(estimate, limit, worst, dense_option, n_labels)}")


def _split_of(estimate: Estimate) -> str:
    """What is fixed (the process itself) and what the data adds, when known."""
    if not estimate.fixed_bytes:
        return ""
    added = estimate.total_bytes - estimate.fixed_bytes
    return (f" ({format_size(estimate.fixed_bytes)} fixed: the interpreter, numpy, Numba and "
            f"its compiled kernels; {format_size(added)} for the data and its features)")


def _advice(estimate: Estimate, limit: int, worst: list[PatternCost],
            dense_option: str | None, n_labels: int) -> str:
    """What would make training fit: only the data's part shrinks with -f or the patterns,
    so a limit below the fixed part can only be raised."""
    if estimate.fixed_bytes and limit <= estimate.fixed_bytes:
        return (f"raise --max-memory above {format_size(estimate.total_bytes)}: the fixed "
                f"part alone exceeds the limit, and -f/--cutoff or the patterns reduce only "
                f"the data's part")
    advice = ["raise -f/--cutoff to drop rare observations"]
    if any(c.pattern.has_bigram and not c.pattern.is_constant for c in worst):
        advice.append(f"make the bigram patterns u: patterns ({n_labels} instead of "
                      f"{n_labels ** 2} weights per observation)")
    if dense_option:
        advice.append(f"drop {dense_option}")
    advice.append("or raise --max-memory if the machine really has the memory")
    return ", ".join(advice)


def return_large_frees_to_the_os() -> None:
    """glibc: serve every block over 128 KB by mmap, so freeing it gives the pages back.

    By default glibc raises that threshold as large blocks are freed, after
    which the numpy and Numba temporaries of feature extraction land on the
    heap and stay in the process's footprint. A no-op elsewhere.
    """
    import ctypes

    try:
        # the process's own symbols, libc's among them: ctypes.util.find_library would run
        # /sbin/ldconfig in a subprocess at every training's start
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD (fixing it stops the adjustment)
    except (OSError, AttributeError, TypeError):
        pass
