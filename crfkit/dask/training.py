"""Training on a Dask cluster: the same model as one process, the corpus on the workers.

The driver never reads the corpus. In order:

1. *count*: each worker reads its shards (byte ranges of the input, or bag
   partitions), extracts them with shard-local string tables and counts
   their observations; the driver receives the tables and the counts only;
2. *vocabulary*: the driver merges them into exactly the vocabulary one
   process would build (:mod:`crfkit.dask.shard_vocab`) and sends each shard the
   map from its local ids to the corpus's;
3. *encode*: the workers renumber their shards and return their features
   and gold counts, from which the driver makes the feature space;
4. *parts*: the corpus's fixed block partition
   (:func:`crfkit.kernels.objective.objective_blocks`, the one ``-t 1``
   uses) is cut into runs of consecutive blocks, one *part* per worker,
   assembled on the workers from slices of the encoded shards, and kept;
5. *iterations*: each evaluation broadcasts the weights once; every part
   computes one gradient row per block, and the rows are added **in block
   order** by a chain of small tasks — part k's task adds its rows to the
   running sum it receives from part k-1 — which are the additions
   :class:`crfkit.kernels.objective.Objective` makes on one machine, in the
   same order. The objective and the model therefore do not depend on the
   number of workers or on which worker ran what: they are those of
   ``crfkit train -t 1``, bit for bit. Per iteration the network carries
   the weights to each worker, one running sum per part boundary and one
   sum back to the driver, each ``8 x n_weights`` bytes.

A lost worker's parts are made again from their source on the workers
that remain (:mod:`crfkit.dask.parts`), and the iteration is repeated with
the same numbers. With no worker left, or the scheduler lost, training
stops as on Ctrl-C: the model of the last finished iteration is kept and
the error is reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crfkit.dask import worker
from crfkit.dask.cluster import LostResult, NoWorkers, Watch, n_workers
from crfkit.dask.parts import Recipe, plan_parts, remake_lost, submit_part
from crfkit.dask.shard_vocab import merge_counts, merge_space
from crfkit.dask.shards import Shard, ShardReport, raise_first_error
from crfkit.errors import InputError, UsageError
from crfkit.features.patterns import Pattern, check_columns
from crfkit.io.reader import Sequence
from crfkit.kernels.objective import finish, objective_blocks, overflow_message
from crfkit.model.model import Model
from crfkit.model.types import MODEL_TYPES
from crfkit.optim import Stop
from crfkit.progress import Progress
from crfkit.space import Dataset
from crfkit.structures.base import Structure
from crfkit.training.corpus import Corpus, encode_devel, feature_kinds, model_patterns
from crfkit.training.jitcache import announce_compile
from crfkit.training.train import Problem, TrainOptions, fit, resolve


@dataclass
class Timing:
    """Per-evaluation times (seconds) and bytes, for ``scripts/bench_dask.py``."""

    broadcast: list[float] = field(default_factory=list)
    compute: list[float] = field(default_factory=list)  # the slowest part's compute
    total: list[float] = field(default_factory=list)
    bytes_sent: list[int] = field(default_factory=list)

    def reduce(self) -> list[float]:
        """What is neither broadcast nor compute: the chained sums and their transfers."""
        return [t - b - c for t, b, c in zip(self.total, self.broadcast, self.compute,
                                             strict=True)]


class ClusterObjective:
    """``f = objective(w, g)`` computed by the parts on the workers (module docstring)."""

    def __init__(self, client: Any, parts: list, empirical: np.ndarray, rho2: float,
                 normalisation: int, n_workers: int,
                 recover: Callable[[Callable], Any] | None = None) -> None:
        self.client = client
        self.recover = recover or (lambda step: step())
        self.parts = parts
        self.empirical = empirical
        self.rho2 = float(rho2)
        self.overflow = overflow_message(normalisation)
        self.n_workers = n_workers
        self.watch = Watch(client)
        self.token_errors = 0
        self.sequence_errors = 0
        self.evaluations = 0
        self.timing = Timing()

    def __call__(self, w: np.ndarray, g: np.ndarray) -> float:
        started = time.perf_counter()
        try:
            result, scattered = self.recover(lambda: self._evaluate(w))
        except NoWorkers as err:
            raise Stop(str(err)) from None
        g[:] = result.g
        f, self.token_errors, self.sequence_errors = finish(
            w, g, np.concatenate(result.outs), self.empirical, self.rho2, self.overflow)
        self.evaluations += 1
        t = self.timing
        t.broadcast.append(scattered)
        t.compute.append(max(result.seconds))
        t.total.append(time.perf_counter() - started)
        # the weights to each worker, a running sum across each part boundary, one sum back
        t.bytes_sent.append(8 * w.size * (self.n_workers + len(self.parts)))
        return f

    def _evaluate(self, w: np.ndarray) -> tuple[worker.Fold, float]:
        """The parts' rows at ``w``, folded in block order; and the seconds to send ``w``."""
        started = time.perf_counter()
        w_future = self.watch.scatter(w)
        scattered = time.perf_counter() - started
        fold = None
        for part in self.parts:
            rows = self.client.submit(worker.rows_task, part, w_future, pure=False)
            fold = self.client.submit(worker.fold_task, fold, rows, pure=False)
        return self.watch.result(fold), scattered


MAX_REMAKES = 3  # parts lost again and again within one step: give up


@dataclass
class Distributed:
    """The corpus as the driver knows it, and the parts on the workers."""

    corpus: Corpus
    parts: list
    n_workers: int
    block_ptr: np.ndarray
    held: list  # the scattered feature space, which the parts' tasks fetch
    recipe: Recipe
    client: Any = None
    progress: Progress = field(default_factory=lambda: Progress(quiet=True))
    failures: list = field(default_factory=list)  # the error that ended training, if one

    def recovering(self, step: Callable[[], Any]) -> Any:
        """``step()``; after a result lost with a worker, the lost parts made again on the
        workers that remain (with a progress line) and ``step()`` repeated."""
        try:
            for _ in range(MAX_REMAKES):
                try:
                    result = step()
                    self._note_lost_workers()
                    return result
                except LostResult as err:
                    remade = remake_lost(self.client, self.recipe, self.parts,
                                         Watch(self.client).scatter)
                    self.n_workers = n_workers(self.client)  # this line says it: no other
                    self.progress.message(
                        f"* {err}: {remade} part(s) made again, step repeated on "
                        f"{self.n_workers} Dask worker(s)")
            try:
                result = step()
                self._note_lost_workers()
                return result
            except LostResult as err:
                raise NoWorkers(f"{err}, again after {MAX_REMAKES} recoveries") from None
        except NoWorkers as err:
            self.failures.append(str(err))
            raise Stop(str(err)) from None

    def _note_lost_workers(self) -> None:
        """A progress line when workers left since the last step (Dask may have made their
        results again by itself: the step went on, but the user should know)."""
        now = n_workers(self.client)
        if now < self.n_workers:
            self.progress.message(f"* {self.n_workers - now} Dask worker(s) lost, {now} left: "
                                  "training goes on")
        self.n_workers = now


def count(client: Any, patterns: list[Pattern], sources: list, *, encoding: str, sep: str,
          watch: Watch) -> tuple[list, list]:
    """Submit the counting of every shard; return the counted futures and the summaries."""
    counted = [client.submit(worker.count_task, source, patterns, encoding, sep, pure=False)
               for source in sources]
    summaries = watch.gather([client.submit(worker.summary_task, c, pure=False)
                              for c in counted])
    return counted, summaries


def _check_reports(sources: list, reports: list[ShardReport], source: str,
                   patterns: list[Pattern]) -> int:
    """Raise the input's first error; return its number of token columns."""
    raise_first_error(sources, reports)
    if not any(r.n_sequences for r in reports):
        raise InputError("training data is empty (no sequences)", path=source)
    n_columns = next(r.columns for r in reports if r.columns)
    check_columns(patterns, n_columns - 1, label_column=True)
    return n_columns - 1


def distribute(client: Any, patterns: list[Pattern], sources: list, *, model_type: str,
               cutoff: int, encoding: str = "utf-8", sep: str = "auto",
               source: str = "<input>", progress: Progress | None = None) -> Distributed:
    """Steps 1-4 of the module docstring: the corpus counted, encoded and in parts."""
    progress = progress or Progress(quiet=True)
    watch = Watch(client)
    progress.status(f"* counting {len(sources)} shard(s) on the workers")
    counted, summaries = count(client, patterns, sources, encoding=encoding, sep=sep,
                               watch=watch)
    reports = [report for _, report in summaries]
    n_token_columns = _check_reports(sources, reports, source, patterns)
    kept = [i for i, (counts, _) in enumerate(summaries) if counts is not None]
    vocab = merge_counts(patterns, [summaries[i][0] for i in kept], cutoff)
    progress.status(f"* encoding {len(kept)} shard(s) under {len(vocab.featurizer.vocab)} "
                    "observations")
    n_obs, L = len(vocab.featurizer.vocab), len(vocab.labels)
    unigram, bigram, has_trans = feature_kinds(patterns, vocab.featurizer.listed, model_type)
    kinds = (unigram, bigram, n_obs, L)
    encoded = [client.submit(worker.encode_task, counted[i], obs_map, label_map, *kinds,
                             pure=False)
               for i, obs_map, label_map in zip(kept, vocab.obs_maps, vocab.label_maps,
                                                strict=True)]
    pairs = watch.gather([client.submit(worker.pairs_task, e, pure=False) for e in encoded])
    space, empirical = merge_space(pairs, n_obs, L, has_trans)
    lengths = [summaries[i][0].lengths for i in kept]
    seq_ptr = np.concatenate([[0], np.cumsum(np.concatenate(lengths))]).astype(np.int64)
    block_ptr = objective_blocks(np.diff(seq_ptr), space.n_weights)
    workers = max(1, n_workers(client))
    # the space has no task to remake it from: held while the parts may need it
    space_future = client.scatter(space, broadcast=True, hash=False)
    normalisation = MODEL_TYPES[model_type].normalisation
    specs = plan_parts([len(x) for x in lengths], block_ptr, workers)
    parts = [submit_part(client, spec, space_future, encoded, normalisation)
             for spec in specs]
    watch.gather(parts)  # built and held: the shards' futures can go
    empty = np.zeros(0, dtype=np.int32)
    data = Dataset(seq_ptr=seq_ptr, tok_ptr=np.zeros(1, dtype=np.int64), tok_obs=empty,
                   labels=empty)
    corpus = Corpus(vocab.featurizer, space, data, empirical, vocab.labels, n_token_columns,
                    np.zeros(space.n_weights))
    recipe = Recipe([sources[i] for i in kept], patterns, encoding, sep, vocab.obs_maps,
                    vocab.label_maps, kinds, space, normalisation, specs)
    return Distributed(corpus, parts, workers, block_ptr, [space_future], recipe, client,
                       progress)


DASK_ALGORITHMS = ("l-bfgs", "sgd-l1", "ap")  # what a cluster trains (crfkit.dask.online)


def refuse_unavailable(patterns: list[Pattern] | None, options: TrainOptions
                       ) -> tuple[Structure, str]:
    """What the workers cannot train, refused before a cluster is used: dense feature sets,
    and whatever the structure refuses on a cluster (the workers encode first-order
    chains only); the structure and model type of the training otherwise."""
    options.validate()
    if options.algo not in DASK_ALGORITHMS:  # the workers' epochs are sgd-l1's and ap's
        raise UsageError(f"-a {options.algo} is not available with --dask (-a "
                         f"{', '.join(DASK_ALGORITHMS)} are)")
    if options.all_features or options.all_labels:
        raise UsageError("--all-features and --all-labels are not available with --dask")
    if options.algo == "bcd":
        raise UsageError("-a bcd is not available with --dask (its blocks are updated one "
                         "after another over the whole corpus)")
    structure, model_type = resolve(options, None, patterns or None, command="dask")
    return structure, model_type


def train(client: Any, patterns: list[Pattern], sources: list[Shard] | list,
          options: TrainOptions | None = None, *, progress: Progress | None = None,
          source: str = "<input>", encoding: str = "utf-8", sep: str = "auto",
          devel: Iterable[Sequence] | None = None, devel_source: str = "<devel>",
          failures: list[str] | None = None) -> Model:
    """Train on the cluster of ``client`` over ``sources`` (file shards or bag partitions,
    in corpus order); the model is the one :func:`crfkit.training.train.train` gives (L-BFGS).
    When the cluster ends training early (the model is then that of the last finished
    iteration), its error is appended to ``failures``."""
    options = options or TrainOptions()
    structure, model_type = refuse_unavailable(patterns, options)
    patterns = model_patterns(patterns, model_type)
    progress = progress or Progress(quiet=True)
    announce_compile(progress, options.algo, model_type, devel is not None, structure)
    started = time.perf_counter()
    dist = distribute(client, patterns, sources, model_type=model_type, cutoff=options.cutoff,
                      encoding=encoding, sep=sep, source=source, progress=progress)
    if failures is not None:
        dist.failures = failures
    corpus = dist.corpus
    dev_set = None if devel is None else encode_devel(corpus, list(devel), devel_source)
    for warning in dev_set.warnings if dev_set is not None else ():
        progress.warning(warning)
    progress.message(
        f"* {structure.heading(model_type)}, {options.algo} on "
        f"{dist.n_workers} Dask worker(s), "
        f"{len(dist.parts)} part(s): {corpus.data.n_seqs} sequences, "
        f"{corpus.data.n_tokens} tokens, {len(corpus.labels)} labels, "
        f"{len(corpus.featurizer.vocab)} observations, {corpus.space.n_weights} features "
        f"({time.perf_counter() - started:.2f}s to encode)")
    problem = Problem(model_type, corpus, options, structure)
    rho2 = problem.rho2
    problem.objective = ClusterObjective(client, dist.parts, corpus.empirical, rho2,
                                         MODEL_TYPES[model_type].normalisation, dist.n_workers,
                                         recover=dist.recovering)
    run = None
    if options.algo != "l-bfgs":
        from crfkit.dask.online import averaged_runner

        run = averaged_runner(client, dist)
    return fit(problem, patterns, progress=progress, dev_set=dev_set, started=started, run=run)
