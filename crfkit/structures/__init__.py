"""The registry of model structures: which one a training uses, which one a model file holds.

The built-in structures are listed here (imported on first use: no Numba); another one (a
test's toy) calls :func:`register`. Nothing outside crfkit/structures/ imports a
structure's own modules: the layering test enforces it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from crfkit.errors import UsageError
from crfkit.options import Option

if TYPE_CHECKING:  # the interface is loaded with the structures, not by `crfkit --help`
    from crfkit.structures.base import Choice, Structure

STRUCTURE = Option("structure", ("--structure",), None, "the model structure (list: "
                   "those known); s: patterns choose skipchain, --order 2 order2", str, "NAME")
_EXTRA: list[type[Structure]] = []
# where the built-ins declare their options: light modules (no numpy, no Numba), read to
# build the command line without loading the structures
_OPTION_MODULES = ("crfkit.structures.order2.options", "crfkit.structures.skipchain.options",
                   "crfkit.structures.latent.options")


def _builtin() -> list[type[Structure]]:
    from crfkit.structures.chain import Chain
    from crfkit.structures.latent.structure import Latent
    from crfkit.structures.order2.structure import Order2
    from crfkit.structures.skipchain.structure import SkipChain

    return [Chain, Order2, SkipChain, Latent]


def register(cls: type[Structure]) -> type[Structure]:
    if any(c.name == cls.name for c in structures()):
        raise ValueError(f"a structure named {cls.name!r} is registered already")
    _EXTRA.append(cls)
    return cls


def unregister(cls: type[Structure]) -> None:
    """Forget a registered structure (a test's toy, after the test)."""
    _EXTRA.remove(cls)


def structures() -> list[type[Structure]]:
    return _builtin() + _EXTRA


def named(name: str) -> Structure:
    for cls in structures():
        if cls.name == name:
            return cls()
    raise UsageError(f"unknown structure {name!r} (expected one of "
                     f"{', '.join(c.name for c in structures())})")


def choose(choice: Choice) -> Structure:
    """The structure a training asks for (the chain when none claims it)."""
    from crfkit.model.types import MODEL_TYPES

    if choice.values.get("structure") not in (None, "list"):
        named(choice.values["structure"])  # one error line for an unknown name
    row = MODEL_TYPES.get(choice.model_type or "")
    claimed = [c for c in structures() if c.claims(choice)
               or (row is not None and row.structure == c.name)]
    if len(claimed) > 1:
        raise UsageError(f"the options choose two structures ({claimed[0].name} and "
                         f"{claimed[1].name}): give the options of one")
    structure = claimed[0]() if claimed else named("chain")
    if choice.init is not None:
        if not claimed:
            structure = named(choice.init)
        elif not structure.continues(choice.init, choice.values):
            raise UsageError(f"the initial model is a {named(choice.init).title}: it cannot "
                             f"continue as a {structure.title}")
        structure.continue_from(choice.values)
    return structure


def for_label_sets(structure: Structure) -> Structure | None:
    """The structure that trains ``structure``'s model from label sets (``?``, ``A|B``):
    itself if it can, else the one registered to train in its place (the chain's: the
    plain crf over label sets, whose model file is a chain's), else None."""
    if structure.label_sets:
        return structure
    stand_in = next((c for c in structures() if c.label_sets_for == structure.name), None)
    return None if stand_in is None else stand_in()


def of_model(meta: Mapping[str, Any]) -> Structure:
    """The structure a model file header holds (the chain's files carry no mark)."""
    for cls in structures():
        if cls.recognises(meta):
            return cls()
    return named("chain")


def declared_train_options(names: tuple[str, ...] | None = None) -> list[Option]:
    """The built-in structures' training options (those in ``names`` only, if given), for
    building a command line."""
    return [o for o in _declared("TRAIN_OPTIONS") if names is None or o.name in names]


def declared_label_options() -> list[Option]:
    """The built-in structures' labelling options, for building a command line."""
    return _declared("LABEL_OPTIONS")


def _declared(kind: str) -> list[Option]:
    from importlib import import_module

    return [o for m in _OPTION_MODULES for o in getattr(import_module(m), kind)]


def train_options() -> list[Option]:
    return [STRUCTURE] + [o for c in structures() for o in c.train_options]


def label_options() -> list[Option]:
    return [o for c in structures() for o in c.label_options]
