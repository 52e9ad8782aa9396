"""Numba options and numeric constants, in one place.

``JIT`` is for every kernel. None is ``parallel=True``: the batch kernels
handle one block of sequences each and :mod:`crfkit.kernels.blocks` runs blocks on
threads (``nogil``), because Numba's parallel compilation made a first run
several times slower. ``cache=True`` everywhere: the compiled code is kept on
disk so a second ``crfkit`` run starts without compiling.
fastmath allows only contraction (FMA), reassociation and reciprocal
division: deterministic at compile time (the same binary gives the same
bits for any thread count), ~10% faster lattices. Never ``nnan``/``ninf``:
Viterbi and constrained decoding rely on -inf, and underflow checks on NaN.
Not ``nsz`` either: with it in the set, the kernels numba loads from its
cache computed gradients that differed in the last bit from the ones it had
compiled in the same run (Numba 0.68), so the first training after an
install gave another model than the next; tests/test_reliability.py checks
cold and cached runs agree. No C-callable wrapper (``no_cfunc_wrapper``): nothing
takes a kernel's address, and each cost compile time on a first run.
"""

JIT = {"cache": True, "nogil": True, "error_model": "numpy", "boundscheck": False,
       "fastmath": {"contract", "reassoc", "arcp"}, "no_cfunc_wrapper": True}

# Sequences are split into this many blocks (fewer for tiny corpora) whatever
# the thread count, and block results are summed in block order, so training
# gives bit-identical weights with 1 or 64 threads.
N_BLOCKS = 16

# Training scores and accumulates the most frequent observations as dense rows
# of L floats: this many floats (1 MB) per block in flight.
DENSE_ROW_CELLS = 1 << 17


def dense_observations(n_obs: int, n_labels: int) -> int:
    """How many of the most frequent observations get dense rows of ``n_labels``."""
    return min(n_obs, DENSE_ROW_CELLS // max(1, n_labels))

# Gradient buffers are per block; cap their total size by using fewer blocks.
MAX_BLOCK_BUFFER_BYTES = 1 << 30

NEG_INF = float("-inf")

# How a model type normalises its scores (the table is crfkit.model.types; the kernels
# take one of these): one log Z per sequence (CRF), a softmax per token given the
# previous label (MEMM), a softmax per token (MaxEnt).
NORM_GLOBAL, NORM_MEMM, NORM_MAXENT = 0, 1, 2

# Label marginals print with four decimals: a probability is a whole number of these steps.
PROB_STEPS = 10_000


def cores() -> int:
    """Cores this process may run on (what Numba's default thread count also follows).
    Here, in a module that imports nothing, so that labelling without kernels never
    loads Numba to count them."""
    import os

    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
