"""Likely unsupported features (``crfkit train --likely-features P``).

Sutton & McCallum (An Introduction to Conditional Random Fields, 1.4.6):
features never seen in training with their label ("unsupported") usually
help, because they learn negative weights against mistakes the model would
make, but all of them (``--all-features``) cost memory and time. Their
middle way, done here: train ``--likely-after`` iterations on the observed
features only, then add every unsupported (observation, label) and
(observation, label pair) feature whose model probability reaches ``P`` on
some training token where the observation fires (the token or pair marginal
under the current weights), and continue training from the weights reached,
new features at zero.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from crfkit.errors import CrfkitError
from crfkit.optim import INTERRUPTED, IterationHook, Result
from crfkit.optim.phases import Phases
from crfkit.progress import Progress
from crfkit.space import FeatureSpace


def run_with_likely_features(problem, hook: IterationHook,
                             run: Callable[..., Result], progress: Progress) -> Result:
    """Train in two phases around :func:`add_likely_features`; ``problem.corpus`` ends
    with the enlarged space (the returned weights are laid out for it)."""
    o = problem.options
    phases = Phases(hook)
    first = run(replace(problem, options=replace(o, maxiter=o.likely_after)), phases.first)
    if first.reason == INTERRUPTED or phases.asked:
        return first
    corpus = problem.corpus
    before = corpus.space.n_weights
    n_u, n_b = add_likely_features(corpus, first.x, o.likely)
    progress.message(f"* likely features after {first.iterations} iterations: {n_u} "
                     f"observation x label and {n_b} observation x label pair features "
                     f"added ({before} -> {corpus.space.n_weights})")
    if phases.ends(first, o.maxiter):
        return replace(first, x=corpus.x0)  # no iteration left: the new features stay at 0
    second = run(replace(problem, options=replace(o, maxiter=phases.left(o.maxiter))),
                 phases.second)
    return phases.joined(second)


def add_likely_features(corpus, x: np.ndarray, threshold: float) -> tuple[int, int]:
    """Enlarge ``corpus``'s space with the likely unsupported features at weights ``x``;
    set its empirical counts and ``x0`` (``x`` moved to the new layout). Returns how many
    unigram and bigram features were added."""
    from crfkit.kernels.likely import likely_marks  # Numba

    space, data, L = corpus.space, corpus.data, corpus.space.n_labels
    u_owner, b_owner = space.owners()
    u_flag = np.zeros(space.n_obs, dtype=np.bool_)
    u_flag[u_owner] = True  # observations of unigram patterns own unigram features
    b_obs = np.unique(b_owner)
    b_index = np.full(space.n_obs, -1, dtype=np.int32)
    b_index[b_obs] = np.arange(len(b_obs), dtype=np.int32)
    umark = np.zeros((space.n_obs, L), dtype=np.bool_)
    bmark = np.zeros((len(b_obs), L, L), dtype=np.bool_)
    skipped = likely_marks(x, space.arrays(), (data.seq_ptr, data.tok_ptr, data.tok_obs), L,
                           float(threshold), u_flag, b_index, umark, bmark)
    if skipped:
        raise CrfkitError(f"numerical underflow in forward-backward on {skipped} training "
                          f"sequences while looking for likely features")
    old_u, old_b = space.keys()
    new_u = np.flatnonzero(umark.ravel()).astype(np.int64)
    r, ab = np.divmod(np.flatnonzero(bmark.ravel()), L * L)
    new_b = b_obs[r].astype(np.int64) * L * L + ab
    u_keys, b_keys = np.union1d(old_u, new_u), np.union1d(old_b, new_b)
    grown = FeatureSpace.from_keys(u_keys, b_keys, space.n_obs, L, space.has_trans)
    corpus.empirical = _moved(corpus.empirical, space, grown, old_u, old_b, u_keys, b_keys)
    corpus.x0 = _moved(x, space, grown, old_u, old_b, u_keys, b_keys)
    corpus.space = grown
    return len(u_keys) - len(old_u), len(b_keys) - len(old_b)


def _moved(values: np.ndarray, old: FeatureSpace, new: FeatureSpace, old_u: np.ndarray,
           old_b: np.ndarray, u_keys: np.ndarray, b_keys: np.ndarray) -> np.ndarray:
    """Per-weight ``values`` of ``old`` at their place in ``new`` (zeros elsewhere)."""
    out = np.zeros(new.n_weights)
    out[np.searchsorted(u_keys, old_u)] = values[:old.n_u]
    out[new.n_u + np.searchsorted(b_keys, old_b)] = values[old.n_u:old.trans_offset]
    out[new.trans_offset:] = values[old.trans_offset:]
    return out
