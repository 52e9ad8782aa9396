"""What decoding reads (a weighted model) and returns (paths, scores, log Z, marginals).

Every structure's decoder returns one :class:`Decoded`; this module imports no Numba.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from crfkit.space import FeatureSpace


class Weighted(Protocol):
    """What decoding reads of a model: a :class:`crfkit.model.model.Model` is one."""

    space: FeatureSpace
    weights: np.ndarray  # float64 (space.n_weights,)
    normalisation: int  # config.NORM_*: how the model type normalises


@dataclass
class Weights:
    """A feature space with weights under training (scoring a development set)."""

    space: FeatureSpace
    weights: np.ndarray
    normalisation: int


@dataclass
class Decoded:
    """Raw decoding results of a batch, from :func:`best_paths` or
    :func:`crfkit.kernels.decoder.decode`.

    Defined apart from every decoder, so that the plain labelling path, the output
    formatting and the structures' interface name it without importing Numba.
    """

    paths: np.ndarray  # int32 (n_tokens, N): label id of rank r at each token, -1 if missing
    scores: np.ndarray  # float64 (n_seqs, N): path scores, -inf where missing or impossible
    log_z: np.ndarray  # float64 (n_seqs,): log Z over the allowed paths, NaN if not computed
    marginals: np.ndarray | None  # float64 (n_tokens, L) token marginals, if asked for
    unsettled: int = 0  # skip-chain: documents whose belief propagation did not converge
