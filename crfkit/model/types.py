"""The model types: one table that training, decoding, the model file and ``info`` read.

A model type is a row: its name, how it normalises scores (the kernels'
``config.NORM_*``), whether it has label-pair features, and whether the
online trainers can train it. A new type adds a row (and its kernels), not
branches wherever the type matters.

* ``crf`` — one partition function per sequence (forward-backward);
* ``memm`` — a softmax per token given the previous label, none at the first
  token (:mod:`crfkit.kernels.loss`); decoded by Viterbi over the local
  log-probabilities;
* ``maxent`` — a softmax per token and no label pairs: a CRF without label-pair
  features *is* this model (its Z factorises over tokens), so the CRF's
  online trainers train it exactly;
* ``skipchain`` — a linear chain plus skip edges between positions of one
  document with the same key (``s:`` patterns, :mod:`crfkit.structures.skipchain.graph`),
  trained on the Bethe approximation by loopy belief propagation
  (:mod:`crfkit.structures.skipchain.belief`); a pattern file with ``s:`` lines trains one.

Importing this module costs nothing (no Numba), so ``crfkit --help`` can list
the names.
"""

from __future__ import annotations

from dataclasses import dataclass

from crfkit.config import NORM_GLOBAL, NORM_MAXENT, NORM_MEMM
from crfkit.errors import UsageError


@dataclass(frozen=True)
class ModelType:
    name: str
    title: str  # what ``crfkit info`` prints
    help: str  # what ``-T list`` prints
    normalisation: int  # config.NORM_*
    label_pairs: bool  # transitions and observation bigrams exist
    online: bool  # sgd-l1 and ap (CRF epochs) train it exactly
    structure: str | None = None  # the structure this type implies (crfkit.structures)


MODEL_TYPES: dict[str, ModelType] = {t.name: t for t in (
    ModelType("crf", "crf (linear-chain CRF)",
              "linear-chain CRF: one normalisation per sequence (default)",
              NORM_GLOBAL, label_pairs=True, online=True),
    ModelType("memm", "memm (maximum-entropy Markov model)",
              "maximum-entropy Markov model: a softmax per token given the previous label "
              "(none at the first token), Viterbi decoding",
              NORM_MEMM, label_pairs=True, online=False),
    ModelType("maxent", "maxent (per-token maximum entropy)",
              "maximum entropy: a softmax per token, no label transitions",
              NORM_MAXENT, label_pairs=False, online=True),
    ModelType("skipchain", "skipchain (skip-chain CRF)",
              "skip-chain CRF: a linear chain plus skip edges between repeated keys of a "
              "document (s: patterns), loopy belief propagation (the default when the "
              "pattern file has s: lines)",
              NORM_GLOBAL, label_pairs=True, online=False, structure="skipchain"),
)}

DEFAULT_TYPE = "crf"


def model_type(name: str) -> ModelType:
    """The row of ``name``; a one-line error naming the known types otherwise."""
    try:
        return MODEL_TYPES[name]
    except KeyError:
        raise UsageError(f"unknown model type {name!r} (expected one of "
                         f"{', '.join(MODEL_TYPES)}; '-T list' describes them)") from None
