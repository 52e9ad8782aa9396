"""Two runs of an optimiser counted as one training (the likely features' phases, a latent
model's structured start): the second run's progress goes on from the first's iterations
and seconds, ``-i`` bounds both together, and a stop the hook asked for in the first run
(``--devel-patience``, ``-w``) or a Ctrl-C ends the training there."""

from __future__ import annotations

from dataclasses import replace

from crfkit.optim import INTERRUPTED, Iteration, IterationHook, Result


class Phases:
    """``first`` and ``second`` are the hooks to give the two runs; ``hook`` the training's."""

    def __init__(self, hook: IterationHook) -> None:
        self.hook = hook
        self.iterations = 0
        self.seconds = 0.0
        self.asked = False

    def first(self, info: Iteration) -> str | None:
        self.iterations, self.seconds = info.it, info.seconds
        reason = self.hook(info)
        self.asked = self.asked or bool(reason)
        return reason

    def ends(self, first: Result, maxiter: int) -> bool:
        """Whether the training ends with the first run (``maxiter`` 0: no limit)."""
        return (first.reason == INTERRUPTED or self.asked
                or bool(maxiter and first.iterations >= maxiter))

    def left(self, maxiter: int) -> int:
        """The second run's ``-i`` (0: no limit)."""
        return maxiter - self.iterations if maxiter else 0

    def second(self, info: Iteration) -> str | None:
        info.it += self.iterations
        info.seconds += self.seconds
        return self.hook(info)

    def joined(self, second: Result) -> Result:
        """The second run's result, its iterations counted from the training's start."""
        return replace(second, iterations=second.iterations + self.iterations)
