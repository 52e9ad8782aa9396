"""The skip chain's feature space: the chain's, then one ``L x L`` block per skip pattern
and per skip-edge observation (``e:`` pattern value) at the end of the weight vector."""

from __future__ import annotations

from dataclasses import dataclass, fields

from crfkit.space import FeatureSpace


@dataclass
class SkipSpace(FeatureSpace):
    """A chain's space with ``n_skip`` blocks of label-pair weights after the chain's."""

    n_skip: int = 0  # skip patterns and skip-edge observations, each an L x L block

    @property
    def skip_offset(self) -> int:
        """Where the skip blocks start: the end of the chain's weights."""
        return self.trans_offset + (self.n_labels**2 if self.has_trans else 0)

    @property
    def n_weights(self) -> int:
        return self.skip_offset + self.n_skip * self.n_labels**2

    @classmethod
    def over(cls, space: FeatureSpace, n_skip: int) -> SkipSpace:
        """The chain's ``space`` (its arrays shared, not copied) with ``n_skip`` blocks."""
        chain = {f.name: getattr(space, f.name) for f in fields(FeatureSpace)
                 if f.name != "n_skip"}
        return cls(**chain, n_skip=n_skip)
