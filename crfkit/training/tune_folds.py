"""The corpora ``crfkit tune`` trains: the whole training set scored on a development set,
or K folds, each fold's complement encoded as a training corpus of its own (its own
vocabulary and cut-off, as a training on that data would have)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from crfkit.errors import UsageError
from crfkit.features.patterns import Pattern
from crfkit.io.reader import Sequence as Sentence
from crfkit.progress import Progress
from crfkit.space import FeatureSpace
from crfkit.structures.base import Structure
from crfkit.training.corpus import Corpus, DevelSet, encode_devel, encode_training
from crfkit.training.monitor import split_tags
from crfkit.training.train_options import TrainOptions
from crfkit.training.tune_path import Strength, TuneOptions, make_folds


@dataclass
class Fold:
    """A training corpus and the held-out sequences that score it."""

    corpus: Corpus
    heldout: DevelSet
    gold: list[list[str]]
    structure: Structure
    grown: dict[float, Corpus] = field(default_factory=dict)  # likely threshold: its corpus
    early_x: np.ndarray | None = None  # the weights after --likely-after iterations from zero

    def corpus_for(self, strength: Strength, start: np.ndarray | None) -> Corpus:
        """The corpus of the point's feature set, starting from ``start`` (None: zeros).

        The first likely point of a threshold grows a copy of the observed corpus
        with the likely features at ``early_x`` (as ``train --likely-features``
        finds them: after ``--likely-after`` iterations from zero, those of the
        path's first, cold point), or at ``start`` if the path never got that
        far; it starts from ``start`` (observed weights), the new features at
        zero. The next points of that threshold reuse it.
        """
        if not strength.likely:
            return self.corpus if start is None else replace(self.corpus, x0=start)
        grown = self.grown.get(strength.likely)
        if grown is not None and start is not None and len(start) == grown.space.n_weights:
            return replace(grown, x0=start)
        if start is None or len(start) != self.corpus.space.n_weights:
            raise UsageError(f"the likely features of {strength} are found from the weights "
                             f"of an observed-feature point: none precedes it on the path")
        from crfkit.training.likely_features import add_likely_features

        grown = replace(self.corpus)
        found_at = self.early_x if self.early_x is not None else start
        add_likely_features(grown, found_at, strength.likely)
        grown.x0 = _relayout(start, self.corpus.space, grown.space)
        self.grown[strength.likely] = grown
        return grown


def _relayout(x: np.ndarray, old: FeatureSpace, new: FeatureSpace) -> np.ndarray:
    """Weights ``x`` of ``old`` at their place in ``new``, a superset (zeros elsewhere)."""
    (old_u, old_b), (new_u, new_b) = old.keys(), new.keys()
    out = np.zeros(new.n_weights)
    out[np.searchsorted(new_u, old_u)] = x[:old.n_u]
    out[new.n_u + np.searchsorted(new_b, old_b)] = x[old.n_u:old.trans_offset]
    out[new.trans_offset:] = x[old.trans_offset:]
    return out


def encode_fold(patterns: list[Pattern], train: list[Sentence], heldout: list[Sentence],
                 options: TrainOptions, model_type: str, source: str,
                 heldout_source: str, structure: Structure) -> Fold:
    corpus = encode_training(patterns, train, cutoff=options.cutoff, source=source,
                             model_type=model_type, all_features=options.all_features,
                             all_labels=options.all_labels, structure=structure)
    # its part (a latent model's allowed states); no rows: tune refuses the structures
    # that need them
    structure.attach(corpus, [], [], options.structure, None, Progress(quiet=True))
    dev = encode_devel(corpus, heldout, heldout_source)
    names = np.array(dev.label_names, dtype=object)
    return Fold(corpus, dev, split_tags(names[dev.data.labels], dev.data.seq_ptr), structure)


def encode_folds(patterns: list[Pattern], sequences: list[Sentence], options: TrainOptions,
            t: TuneOptions, kind: tuple[str, Structure], devel: list[Sentence] | None,
            source: str, devel_source: str, progress: Progress) -> tuple[list[Fold], str]:
    """The corpora to train: the whole set (with ``devel``), else one per fold (``kind``:
    the model type and structure)."""
    model_type, structure = kind
    if not sequences:
        raise UsageError("training data is empty (no sequences)")
    if devel is not None:
        fold = encode_fold(patterns, sequences, devel, options, model_type, source,
                            devel_source, structure)
        for warning in fold.heldout.warnings:
            progress.warning(warning)
        return [fold], "devel"
    folds = []
    for held in make_folds(len(sequences), t.folds, t.seed):
        keep = np.ones(len(sequences), dtype=bool)
        keep[held] = False
        progress.status(f"* encoding fold {len(folds) + 1} of {t.folds}")
        folds.append(encode_fold(patterns, [sequences[i] for i in np.flatnonzero(keep)],
                                  [sequences[i] for i in held], options, model_type,
                                  source, source, structure))
    progress.clear_status()
    return folds, "folds"
