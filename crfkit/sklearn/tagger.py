"""A tagger with python-crfsuite's ``Tagger`` methods, over a crfkit attribute model.

Code written for ``pycrfsuite.Tagger`` calls ``open(path)``, ``labels()``,
``set(xseq)``, ``tag()``/``tag(xseq)`` (which also makes ``xseq`` current),
``marginal(label, position)``, ``probability(yseq)``, ``info()``, ``dump()``
and ``close()``; these work the same here. Batches (:meth:`Tagger.tag_many`)
are decoded in one call of crfkit's multi-threaded decoder rather than one
sequence at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crfkit.attributes import attribute_model as attrs


class Tagger:
    """Labels sequences of token features with an
    :class:`~crfkit.attributes.attribute_model.AttributeModel`."""

    def __init__(self, model: attrs.AttributeModel | None = None, *,
                 n_jobs: int | None = None) -> None:
        self.n_jobs = n_jobs
        self._current: _Current | None = None
        self.model = model  # type: ignore[assignment]
        if model is not None:
            self._use(model)

    def _use(self, model: attrs.AttributeModel) -> None:
        self.model = model
        self._vocab = model.vocab()
        self._current = None

    def open(self, path: str) -> Tagger:
        """Load a model file: crfkit's, or CRFsuite's binary format (python-crfsuite's,
        sklearn-crfsuite's ``model_filename``)."""
        from crfkit.foreign.crfsuite_attributes import load_attribute_model

        self._use(load_attribute_model(path))
        return self

    def close(self) -> None:
        """Forget the model (python-crfsuite frees it here; nothing else to release)."""
        self.model = None  # type: ignore[assignment]
        self._current = None

    def _model(self) -> attrs.AttributeModel:
        if self.model is None:
            raise ValueError("no model is open: call open(path) first")
        return self.model

    def labels(self) -> list[str]:
        """The model's labels, in model order."""
        return list(self.model.labels)

    def _decode(self, X, *, marginals: bool):
        from crfkit.kernels.decoder import decode

        model = self._model()
        data = attrs.encode(X, self._vocab, grow=False)
        with threads(self.n_jobs):
            decoded = decode(model, data, marginals=marginals)
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
        """Make ``xseq`` the current sequence (for :meth:`tag`, :meth:`marginal` and
        :meth:`probability`)."""
        model = self._model()
        data = attrs.encode([xseq], self._vocab, grow=False)
        self._current = _Current(data, None, None)
        self._current.labels = self._best(model, data)

    def _best(self, model: attrs.AttributeModel, data) -> list[str]:
        """The best labels of one sequence: one block, decoded on the calling thread
        whatever the thread setting, so no thread-count switch (:class:`threads`)."""
        from crfkit.kernels.decoder import decode

        labels = model.labels
        return [labels[i] for i in decode(model, data).paths[:, 0].tolist()]

    def tag(self, xseq=None) -> list[str]:
        """The best labels of ``xseq`` (which becomes the current sequence, as in
        python-crfsuite), or of the current sequence."""
        if xseq is not None:
            self.set(xseq)
        if self._current is None:
            raise ValueError("no sequence is set: call set(xseq) or tag(xseq)")
        return list(self._current.labels)

    def _current_or_fail(self) -> _Current:
        if self._current is None:
            raise ValueError("no sequence is set: call set(xseq) first")
        return self._current

    def marginal(self, label: str, position: int) -> float:
        """P(label at ``position``) in the current sequence."""
        current = self._current_or_fail()
        y = self._label_id(label)
        if current.marginals is None:  # computed on first use: tag() alone needs none
            from crfkit.kernels.decoder import decode

            with threads(self.n_jobs):
                current.marginals = decode(self._model(), current.data,
                                           marginals=True).marginals
        marginals = current.marginals
        if not 0 <= position < len(marginals):
            raise IndexError(f"position {position} is outside the sequence")
        return float(marginals[position, y])

    def probability(self, yseq) -> float:
        """P(``yseq`` | current sequence): the labels' path score against all paths'."""
        from crfkit.kernels.decoder import decode

        current = self._current_or_fail()
        model, data = self._model(), current.data
        ids = [self._label_id(label) for label in yseq]
        if len(ids) != data.n_tokens:
            raise ValueError(f"the label sequence has {len(ids)} labels but the current "
                             f"sequence {data.n_tokens} tokens")
        forced = np.zeros((data.n_tokens, len(model.labels)), dtype=bool)
        forced[np.arange(data.n_tokens), ids] = True
        with threads(self.n_jobs):
            log_z = decode(model, data, log_z=True).log_z[0]
            score = decode(model, data, token_ok=forced).scores[0, 0]
        return float(np.exp(score - log_z)) if data.n_tokens else 1.0

    def _label_id(self, label: str) -> int:
        try:
            return self._model().labels.index(label)
        except ValueError:
            raise ValueError(f"unknown label {label!r}") from None

    def info(self) -> ModelInfo:
        """The model's labels, attributes and weights, as python-crfsuite's ``info()``."""
        model = self._model()
        return ModelInfo(
            header={"algorithm": str(model.info.get("algorithm", "")),
                    "model_type": model.model_type,
                    "num_labels": str(len(model.labels)),
                    "num_attrs": str(len(model.attributes))},
            labels={label: i for i, label in enumerate(model.labels)},
            attributes=model.vocab(),
            transitions=self.transition_features(),
            state_features=self.state_features())

    def dump(self, filename: str | None = None) -> None:
        """Write the model's features as text (to ``filename``, else to standard output):
        one ``(attribute) label weight`` or ``label -> label weight`` line each."""
        import sys

        lines = [f"{a} -> {b}\t{w:.6f}\n" for (a, b), w in self.transition_features().items()]
        lines += [f"({attr}) {label}\t{w:.6f}\n"
                  for (attr, label), w in self.state_features().items()]
        if filename is None:
            sys.stdout.writelines(lines)
            return
        from crfkit.io.atomic import atomic_output

        with atomic_output(filename) as out:
            out.writelines(lines)

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


@dataclass
class _Current:
    """The sequence :meth:`Tagger.set` made current: its encoding, best labels and (once
    asked for) its token marginals."""

    data: object
    labels: list[str] | None
    marginals: np.ndarray | None


@dataclass
class ModelInfo:
    """python-crfsuite's ``ParsedDump``: what :meth:`Tagger.info` returns."""

    header: dict[str, str]
    labels: dict[str, int]
    attributes: dict[str, int]
    transitions: dict[tuple[str, str], float]
    state_features: dict[tuple[str, str], float]


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
