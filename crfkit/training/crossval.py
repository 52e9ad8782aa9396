"""CRFsuite's holdout evaluation and cross-validation (``crfsuite learn -g N -e M`` / ``-x``).

CRFsuite deals the training instances into N groups after one pass of its shuffle
(swap instance ``i`` with instance ``rand() % n``, ``rand()`` never seeded), instance
``i`` of the shuffled order going to group ``i % N``. :func:`crfsuite_groups` replays that
deal (:mod:`crfkit.optim.crandom`), so a group holds the sentences CRFsuite's group of the
same number holds on the same file. ``-e M`` trains on every group but M and scores M;
``-x`` does so for each group in turn. Each fold is a training of its own (its vocabulary
and cut-off from its training groups, as ``crfkit train`` on those sentences would make),
scored as ``crfkit eval`` scores (conlleval's accuracy and chunk F1).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from crfkit.errors import UsageError
from crfkit.evaluation.scoring import evaluate
from crfkit.features.patterns import Pattern
from crfkit.io.reader import Sequence
from crfkit.optim.crandom import crfsuite_orders
from crfkit.progress import Progress
from crfkit.training.train_options import TrainOptions


@dataclass(frozen=True)
class FoldScore:
    """The score of one held-out group (1-based ``group``) of the model trained on the rest."""

    group: int
    sequences: int
    tokens: int
    accuracy: float  # percent, as crfkit eval prints it
    f1: float  # chunk F1, percent
    iterations: int
    seconds: float


def crfsuite_groups(n_sequences: int, n_groups: int) -> np.ndarray:
    """The group (0-based) of each sequence, dealt as CRFsuite's ``-g N`` deals them."""
    return crfsuite_deal(n_sequences, n_groups)[1]


def crfsuite_deal(n_sequences: int, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """CRFsuite's order after its shuffle (position i holds sequence ``order[i]``: its
    front end trains on the groups in that order) and the group of each sequence."""
    if n_groups < 2:
        raise UsageError(f"-g/--split must be >= 2, got {n_groups}")
    if n_sequences < n_groups:
        raise UsageError(f"-g/--split {n_groups}: the training data has only {n_sequences} "
                         f"sequence(s), fewer than the groups")
    shuffled = crfsuite_orders(n_sequences, 1)()
    groups = np.empty(n_sequences, dtype=np.int64)
    groups[shuffled] = np.arange(n_sequences) % n_groups
    return shuffled, groups


def split_group(sequences: list[Sequence], groups: np.ndarray,
                group: int) -> tuple[list[Sequence], list[Sequence]]:
    """(the sequences of every other group, those of ``group``), each in file order."""
    rest = [s for s, g in zip(sequences, groups, strict=True) if g != group]
    held = [s for s, g in zip(sequences, groups, strict=True) if g == group]
    return rest, held


def check_holdout(holdout: int, n_groups: int) -> None:
    if not 1 <= holdout <= n_groups:
        raise UsageError(f"--holdout must be a group number in 1..{n_groups} (-g {n_groups}), "
                         f"got {holdout}")


# Train on the first sequences, label the second: (their gold labels, the predicted ones,
# the training's iterations, whether it was interrupted)
FoldRun = Callable[[list, list], "tuple[list[list[str]], list[list[str]], int, bool]"]


def score(gold: list[list[str]], pred: list[list[str]], group: int, iterations: int,
          seconds: float) -> FoldScore:
    """The held-out group's scores, as crfkit eval gives them."""
    report = evaluate(gold, pred)
    return FoldScore(group, len(gold), sum(len(g) for g in gold), report.accuracy, report.f1,
                     iterations, seconds)


def column_fold(patterns: list[Pattern] | None, options: TrainOptions, progress: Progress,
                source: str = "<input>") -> FoldRun:
    """A fold of a column file: ``crfkit train`` on the training groups, then label."""
    from crfkit.labelling.label import label_sequences
    from crfkit.training.train import train

    def run(rest: list[Sequence], held: list[Sequence]):
        model = train(patterns, rest, options, progress=progress, source=source)
        gold = [[row[-1] for row in s.rows] for s in held]
        return (gold, label_sequences(model, held), int(model.info.get("iterations", 0)),
                model.info.get("stop_reason") == "interrupted")

    return run


def cross_validate(fold: FoldRun, sequences: list, n_groups: int, *, progress: Progress,
                   groups: np.ndarray | None = None) -> list[FoldScore]:
    """Train on all groups but one and score that one, for each group in turn (``-x``);
    ``groups``: each sequence's, if not :func:`crfsuite_groups`'."""
    if groups is None:
        groups = crfsuite_groups(len(sequences), n_groups)
    scores = []
    for group in range(n_groups):
        rest, held = split_group(sequences, groups, group)
        progress.message(f"===== cross-validation: fold {group + 1} of {n_groups} "
                         f"(group {group + 1} held out: {len(held)} sequences) =====")
        began = time.perf_counter()
        gold, pred, iterations, interrupted = fold(rest, held)
        scores.append(score(gold, pred, group + 1, iterations, time.perf_counter() - began))
        progress.message(fold_line(scores[-1]))
        if interrupted:
            break
    return scores


def fold_line(score: FoldScore) -> str:
    return (f"fold {score.group}: accuracy {score.accuracy:6.2f}%  F1 {score.f1:6.2f}  "
            f"({score.sequences} sequences, {score.tokens} tokens, {score.iterations} "
            f"iterations, {score.seconds:.1f}s)")


def summary_lines(scores: list[FoldScore]) -> list[str]:
    """One line per fold, then the mean and standard deviation over the folds."""
    lines = [fold_line(s) for s in scores]
    accuracy = np.array([s.accuracy for s in scores])
    f1 = np.array([s.f1 for s in scores])
    lines.append(f"mean over {len(scores)} folds: accuracy {accuracy.mean():6.2f}% "
                 f"(sd {accuracy.std():.2f})  F1 {f1.mean():6.2f} (sd {f1.std():.2f})")
    return lines
