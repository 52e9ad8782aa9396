"""A tagger with python-crfsuite's ``Tagger`` methods, over a crfkit attribute model.

Code written for ``pycrfsuite.Tagger`` calls ``labels()``, ``set(xseq)``,
``tag()``/``tag(xseq)`` and ``marginal(label, position)``; these work the
same here. Batches (:meth:`Tagger.tag_many`) are decoded in one call of
crfkit's multi-threaded decoder rather than one sequence at a time.
"""

from __future__ import annotations

import numpy as np

from crfkit import attributes as attrs


class Tagger:
    """Labels sequences of token features with an :class:`~crfkit.attributes.AttributeModel`."""

    def __init__(self, model: attrs.AttributeModel, *, n_jobs: int | None = None) -> None:
        self.model = model
        self.n_jobs = n_jobs
        self._vocab = model.vocab()
        self._current: tuple[list[str], np.ndarray] | None = None

    def labels(self) -> list[str]:
        """The model's labels, in model order."""
        return list(self.model.labels)

    def _decode(self, X, *, marginals: bool):
        from crfkit.kernels.decoder import decode

        data = attrs.encode(X, self._vocab, grow=False)
        with threads(self.n_jobs):
            decoded = decode(self.model, data, marginals=marginals)
        return data.seq_ptr, decoded

    def tag_many(self, X) -> list[list[str]]:
        """The best label sequence of every sequence of ``X``."""
        ptr, decoded = self._decode(X, marginals=False)
        names = np.array(self.model.labels, dtype=object)[decoded.paths[:, 0]]
        return [names[ptr[s]:ptr[s + 1]].tolist() for s in range(len(ptr) - 1)]

    def marginals_many(self, X) -> list[list[dict[str, float]]]:
        """Per sequence, per token, the marginal probability of every label."""
        ptr, decoded = self._decode(X, marginals=True)
        labels = self.model.labels
        rows = [dict(zip(labels, row, strict=True)) for row in decoded.marginals.tolist()]
        return [rows[ptr[s]:ptr[s + 1]] for s in range(len(ptr) - 1)]

    def set(self, xseq) -> None:
        """Make ``xseq`` the current sequence (for :meth:`tag` and :meth:`marginal`)."""
        ptr, decoded = self._decode([xseq], marginals=True)
        names = [self.model.labels[i] for i in decoded.paths[:, 0].tolist()]
        self._current = (names, decoded.marginals)

    def tag(self, xseq=None) -> list[str]:
        """The best labels of ``xseq``, or of the current sequence."""
        if xseq is not None:
            return self.tag_many([xseq])[0]
        if self._current is None:
            raise ValueError("no sequence is set: call set(xseq) or tag(xseq)")
        return list(self._current[0])

    def marginal(self, label: str, position: int) -> float:
        """P(label at ``position``) in the current sequence."""
        if self._current is None:
            raise ValueError("no sequence is set: call set(xseq) first")
        try:
            y = self.model.labels.index(label)
        except ValueError:
            raise ValueError(f"unknown label {label!r}") from None
        marginals = self._current[1]
        if not 0 <= position < len(marginals):
            raise IndexError(f"position {position} is outside the sequence")
        return float(marginals[position, y])

    # -- what the model holds (sklearn-crfsuite's fitted attributes) --------------------------
    def state_features(self) -> dict[tuple[str, str], float]:
        """``{(attribute, label): weight}`` of the non-zero state features."""
        s, W = self.model.space, self.model.weights
        owner = np.repeat(np.arange(s.n_obs), np.diff(s.u_ptr))
        keep = np.flatnonzero(W[:s.n_u] != 0.0)
        names, labels = self.model.attributes, self.model.labels
        return {(names[o], labels[y]): w for o, y, w in zip(
            owner[keep].tolist(), s.u_lab[keep].tolist(), W[keep].tolist(), strict=True)}

    def transition_features(self) -> dict[tuple[str, str], float]:
        """``{(label_from, label_to): weight}`` of the non-zero transition weights."""
        s, W, labels = self.model.space, self.model.weights, self.model.labels
        if not s.has_trans:
            return {}
        L = s.n_labels
        block = W[s.trans_offset:].reshape(L, L)
        return {(labels[a], labels[b]): float(block[a, b])
                for a in range(L) for b in range(L) if block[a, b] != 0.0}

    def active_attributes(self) -> list[str]:
        """The attributes with at least one non-zero state feature, in model order."""
        s, W = self.model.space, self.model.weights
        owner = np.repeat(np.arange(s.n_obs), np.diff(s.u_ptr))
        active = np.zeros(s.n_obs, dtype=bool)
        active[owner[W[:s.n_u] != 0.0]] = True
        return [self.model.attributes[o] for o in np.flatnonzero(active).tolist()]


class threads:
    """Run a block with ``n_jobs`` threads, restoring the caller's setting after."""

    def __init__(self, n_jobs: int | None) -> None:
        self.n = 0 if n_jobs is None or n_jobs < 0 else int(n_jobs)

    def __enter__(self) -> None:
        import numba

        from crfkit.kernels.blocks import set_thread_count

        self.before = numba.get_num_threads()
        set_thread_count(self.n)

    def __exit__(self, *exc) -> None:
        import numba

        numba.set_num_threads(self.before)
