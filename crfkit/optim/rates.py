"""Calibrating sgd-l1's learning rate on a sample (a doubling/halving walk after CRFsuite's).

Candidates start at ``ETA`` and are multiplied by ``RATE`` while the sample
objective after one epoch improves; if the first doubling does not help,
they are divided instead. At most ``TRIALS`` steps each way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

ETA = 0.1
RATE = 2.0
TRIALS = 10
SAMPLES = 1000  # sequences in the calibration sample


def sample_ids(n_seqs: int, seed: int, samples: int = SAMPLES) -> np.ndarray:
    """Sorted ids of up to ``samples`` sequences drawn without replacement from ``seed``."""
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(n_seqs, size=min(samples, n_seqs), replace=False))
    return sample.astype(np.int64)


def best_rate(trial: Callable[[float], float]) -> float:
    """The candidate rate with the lowest ``trial(eta)`` (the sample objective after one
    epoch at that rate; ``inf`` for a diverged trial) along the doubling/halving walk."""
    best_eta, best = ETA, trial(ETA)
    for factor in (RATE, 1.0 / RATE):
        eta = best_eta * factor
        for _ in range(TRIALS):
            value = trial(eta)
            if not value < best:
                break
            best_eta, best = eta, value
            eta *= factor
        if best_eta != ETA:
            break
    return best_eta
