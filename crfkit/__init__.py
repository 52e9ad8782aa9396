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
import sys
import types
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "CrfkitError": "crfkit.errors",
    "Model": "crfkit.model",
    "TrainOptions": "crfkit.train",
    "evaluate": "crfkit.evaluate",
    "label_sequences": "crfkit.label",
    "parse_patterns": "crfkit.features.patterns",
    "read_patterns": "crfkit.features.patterns",
    "read_sequences": "crfkit.reader",
    "train": "crfkit.train",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'crfkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """Keeps ``crfkit.train`` (and ``evaluate``) the functions, not the submodules.

    Importing ``crfkit.train`` makes Python set the package attribute
    ``train`` to the submodule, which would hide the function of the same
    name; the submodules stay reachable through ``sys.modules`` and
    ``from crfkit.train import ...``.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
