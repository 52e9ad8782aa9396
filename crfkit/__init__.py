"""crfkit: fast linear-chain CRFs for sequence labelling.

The Python API mirrors the command line::

    import crfkit
    patterns = crfkit.read_patterns("patterns/chunking.pat")
    model = crfkit.train(patterns, crfkit.read_sequences("train.txt"))
    model.save("chunk.model")
    model = crfkit.Model.load("chunk.model")
    predicted = crfkit.label_sequences(model, list(crfkit.read_sequences("test.txt")))
    report = crfkit.evaluate(gold_tag_sequences, predicted)

Names are imported on first use, so ``import crfkit`` does not load Numba.
"""

from __future__ import annotations

import importlib
from typing import Any

from crfkit.numbahook import after_numba

__version__ = "0.1.0"

_EXPORTS = {
    "CrfkitError": "crfkit.errors",
    "Model": "crfkit.model.model",
    "TrainOptions": "crfkit.training.train",
    "evaluate": "crfkit.evaluation.scoring",
    "label_sequences": "crfkit.labelling.label",
    "parse_patterns": "crfkit.features.patterns",
    "read_patterns": "crfkit.features.patterns",
    "read_sequences": "crfkit.io.reader",
    "train": "crfkit.training.train",
}

__all__ = ["__version__", *_EXPORTS]


def _stamp_kernels() -> None:
    from crfkit.kernels.sourcestamp import install

    install()


after_numba(_stamp_kernels)  # before any crfkit kernel is decorated


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'crfkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

