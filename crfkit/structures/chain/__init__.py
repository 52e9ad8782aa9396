"""The linear chain: the first-order feature space, its objective, epochs and decoders.

Its kernels are crfkit.kernels' (the building blocks every structure shares); this is the
chain's side of the interface. Its model files carry no structure mark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import numpy as np

from crfkit.config import NORM_GLOBAL
from crfkit.errors import UsageError
from crfkit.kernels.decoded import Decoded, Weighted
from crfkit.space import Dataset, merge_spaces
from crfkit.structures.base import Corpus, DecodeRequest, Kernels, Structure

# compile seconds of each kernel group (README's 2-core machine; first run, empty cache)
CRF, LOCAL, SGD, PERCEPTRON, DEVEL, ONLINE, DECODE, MIRA, BCD = 7, 4, 9, 5, 4, 6, 11, 5, 8


class Chain(Structure):
    name: ClassVar[str] = "chain"
    title: ClassVar[str] = "linear chain"

    @classmethod
    def recognises(cls, meta: Mapping[str, Any]) -> bool:
        """The chain's files carry no mark (it is the registry's fallback); a structure
        built on the chain that keeps this method is known by its ``structure`` mark."""
        return cls is not Chain and super().recognises(meta)

    def patterns(self, patterns, progress):
        kept = [p for p in patterns if not p.has_trigram]
        if not kept:
            p = next(p for p in patterns if p.has_trigram)
            raise UsageError(f"pattern {p.text!r} (line {p.line}) is a trigram pattern: "
                             f"train with --order 2")
        if progress and len(kept) < len(patterns):
            progress.message(f"* first order: {len(patterns) - len(kept)} trigram pattern(s) "
                             f"(t) ignored (--order 2 uses them)")
        return kept

    def merge_init(self, space, empirical, init_space, init_weights):
        return merge_spaces(space, empirical, init_space, init_weights)

    def objective(self, corpus: Corpus, rho2: float, normalisation: int, values):
        from crfkit.kernels.objective import Objective

        return Objective(corpus.space, corpus.data, corpus.empirical, rho2, normalisation,
                         frozen=corpus.frozen)

    def epochs(self, kind: str, corpus: Corpus) -> object:
        if kind == "sgd":
            from crfkit.kernels.epochs import SgdEpochs

            return SgdEpochs(corpus.space, corpus.data)
        if kind == "perceptron":
            from crfkit.kernels.epochs import PerceptronEpochs

            return PerceptronEpochs(corpus.space, corpus.data)
        if kind == "mira":
            from crfkit.kernels.mira import MiraEpochs

            return MiraEpochs(corpus.space, corpus.data, corpus.frozen)
        from crfkit.kernels.crfsuite_epochs import OnlineEpochs

        return OnlineEpochs(corpus.space, corpus.data, corpus.frozen)

    def coordinate_blocks(self, corpus: Corpus) -> object | None:
        from crfkit.kernels.bcd import BlockDescent

        return BlockDescent(corpus.space, corpus.data, corpus.empirical)

    def decode(self, model: Weighted, data: Dataset, request: DecodeRequest) -> Decoded:
        r = request
        if not (r.kernels or r.nbest > 1 or r.log_z or r.marginals or r.posterior) \
                and data.tok_val is None:
            if r.fused and self.fused_best_path(model):
                from crfkit.kernels.fusedpath import fused_best_paths

                found = fused_best_paths(model, data, token_ok=r.token_ok, trans_ok=r.trans_ok)
                if found is not None:
                    return found
            from crfkit.kernels.bestpath import best_paths  # numpy: no Numba to load

            return best_paths(model, data, token_ok=r.token_ok, trans_ok=r.trans_ok)
        from crfkit.kernels.decoder import decode

        return decode(model, data, nbest=r.nbest, log_z=r.log_z, marginals=r.marginals,
                      posterior=r.posterior, token_ok=r.token_ok, trans_ok=r.trans_ok)

    def fused_best_path(self, model: Weighted) -> bool:
        """A globally normalised chain without observation bigrams (what the fused kernel
        computes); a structure built on the chain decodes its own way."""
        return (type(self) is Chain and model.normalisation == NORM_GLOBAL
                and model.space.n_b == 0)

    def save(self, space, meta, arrays) -> None:
        """The chain's arrays are the model's own: its files stay as they were; a structure
        built on the chain that keeps this method marks its files with its name."""
        if type(self) is not Chain:
            super().save(space, meta, arrays)

    def compact(self, space, weights, keep_u, keep_b):
        W = weights
        new, keep_obs = space.subset(keep_u, keep_b)
        return new, np.concatenate([W[:space.n_u][keep_u],
                                    W[space.n_u:space.trans_offset][keep_b],
                                    W[space.trans_offset:]]), keep_obs

    def kernels(self, algo: str, model_type: str, devel: bool) -> Iterable[tuple[int, Kernels]]:
        """Only kernels every such run calls (not L-BFGS's: a run stopping after one
        iteration never calls them, and an uncalled kernel is never cached)."""
        if algo == "l-bfgs":
            yield (CRF, _crf) if model_type == "crf" else (LOCAL, _local)
        elif algo == "sgd-l1":
            yield SGD, _sgd
        elif algo == "ap":
            yield PERCEPTRON, _perceptron
        elif algo in ("l2sgd", "pa", "arow"):
            yield ONLINE, lambda: _online(algo)
        elif algo == "mira":
            yield MIRA, _mira
        elif algo == "bcd":
            yield BCD, _bcd
        if devel:
            yield DEVEL, _devel

    def label_kernels(self, numpy_will_do: bool) -> Iterable[tuple[int, Kernels]]:
        return () if numpy_will_do else ((DECODE, _devel),)

    def heading(self, model_type: str) -> str:
        """A crf has a label order to choose (the second order's heading says 2)."""
        return f"{model_type} order 1" if model_type == "crf" else model_type


def _crf() -> list[tuple[object, ...]]:
    from crfkit.kernels import lattice, loss

    # the training kernel has a version per kind of corpus (loss.crf_loss_block); a corpus
    # needs one
    return [tuple(loss.CRF_LOSS_KERNELS.values()), (lattice.load_transitions,),
            (lattice.max_abs,), (loss.add_blocks,)]


def _local() -> list[tuple[object, ...]]:
    from crfkit.kernels import loss

    return [(loss.local_loss_block,), (loss.add_blocks,)]


def _sgd() -> list[tuple[object, ...]]:
    from crfkit.kernels import epochs, sgdfused

    # the fused epoch for plain corpora, the reference one for valued corpora
    return [(sgdfused.sgd_epoch_fused, epochs.sgd_epoch)]


def _perceptron() -> list[tuple[object, ...]]:
    from crfkit.kernels import crfsuite_epochs

    return [(crfsuite_epochs.ap_epoch,)]


def _online(algo: str) -> list[tuple[object, ...]]:
    from crfkit.kernels import crfsuite_epochs

    return [(getattr(crfsuite_epochs, f"{algo}_epoch"),)]


def _mira() -> list[tuple[object, ...]]:
    from crfkit.kernels import mira

    return [(mira.mira_epoch,)]


def _devel() -> list[tuple[object, ...]]:
    from crfkit.kernels import decoder

    return [(decoder.decode_block,)]


def _bcd() -> list[tuple[object, ...]]:
    from crfkit.kernels import bcd

    return [(bcd.sweep,), (bcd.occurrence_index,)]
