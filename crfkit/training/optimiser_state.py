"""``--sstate FILE`` / ``--rstate FILE``: an optimiser's state on disk, to continue a run.

The file is an ``.npz`` of plain arrays (no pickle, no object arrays): the optimiser's own
(:attr:`crfkit.optim.Result.state`) plus ``problem``, a JSON text that says which problem
the state belongs to: the algorithm, the penalties, and a hash of the encoded corpus (its
sequences, observations and their strings, gold labels, feature counts) and patterns.
Restoring a state on other data, patterns or penalties would continue a different problem from a
point that is not on its path: refused in one line instead.
"""

from __future__ import annotations

import hashlib
import json
import zipfile

import numpy as np

from crfkit.errors import UsageError
from crfkit.io.atomic import atomic_output
from crfkit.training.train_options import Problem

FORMAT = "crfkit optimiser state 1"
PROBLEM_KEY = "problem"


def problem_of(problem: Problem) -> dict:
    """What a state must match to continue ``problem``'s run."""
    o, c = problem.options, problem.corpus
    digest = hashlib.sha256()
    f = c.featurizer
    for array in (c.data.seq_ptr, c.data.tok_ptr, c.data.tok_obs, c.data.labels, c.empirical,
                  f.vocab.keys, f.vocab.pattern):
        digest.update(np.ascontiguousarray(array).tobytes())
    for strings in (c.labels, [p.text for p in f.patterns], *(t.strings for t in f.tables)):
        digest.update("\n".join(strings).encode("utf-8") + b"\0")
    described = {"format": FORMAT, "algorithm": o.algo, "model type": problem.model_type,
                 "weights": int(c.space.n_weights), "corpus": digest.hexdigest(),
                 "rho1": float(o.rho1), "rho2": float(problem.rho2)}
    if o.algo == "l-bfgs":
        described["history"] = int(o.history)
    return described


def save(path: str, state: dict, problem: Problem) -> None:
    """Write ``state`` with its problem's description to ``path``, atomically."""
    arrays = {name: np.asarray(value) for name, value in state.items()}
    arrays[PROBLEM_KEY] = np.array(json.dumps(problem_of(problem), sort_keys=True))
    with atomic_output(path, binary=True) as stream:
        np.savez(stream, **arrays)


def load(path: str, problem: Problem) -> dict:
    """The state saved in ``path``, refused in one line unless it continues ``problem``."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            state = {name: archive[name] for name in archive.files}
        saved = json.loads(str(state.pop(PROBLEM_KEY)))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        raise UsageError(f"{path}: not an optimiser state written by --sstate ({error})") \
            from None
    expected = problem_of(problem)
    for key, value in expected.items():
        if saved.get(key) != value:
            differs = ("its corpus or patterns differ" if key == "corpus" else
                       f"{key} {saved.get(key)!r} there, {value!r} here")
            raise UsageError(f"{path}: the state is for another training ({differs}); give "
                             f"the data, patterns and options it was saved with")
    return state
