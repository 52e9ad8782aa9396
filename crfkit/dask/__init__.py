"""crfkit on a Dask cluster: training and labelling beyond one machine.

``pip install 'crfkit[dask]'``. Nothing in crfkit imports this package unless
``--dask`` is given or it is imported, so the plain install never needs Dask.

Python API, following dask-ml and LightGBM's Dask estimators (a ``client=``
parameter; Dask's default client when it is None)::

    from distributed import Client
    import crfkit.dask

    client = Client("tcp://scheduler:8786")
    model = crfkit.dask.train("patterns/chunking.pat", "data/part-*.txt", client=client)
    labels = crfkit.dask.label(model, bag)   # a dask.bag of label lists, lazily

:func:`train` gives the model ``crfkit train -t 1`` gives on the same corpus
(L-BFGS / OWL-QN), bit for bit (:mod:`crfkit.dask.training` says how).
"""

from __future__ import annotations

import os
from typing import Any

from crfkit.dask.cluster import NoWorkers, connect, default_client
from crfkit.dask.shards import DEFAULT_SHARD_BYTES, expand_inputs, plan_shards
from crfkit.features.patterns import Pattern, read_patterns
from crfkit.model.model import Model
from crfkit.progress import Progress
from crfkit.training.train import TrainOptions

__all__ = ["NoWorkers", "connect", "label", "train"]


def train(patterns: str | os.PathLike | list[Pattern], paths_or_bag: Any, client: Any = None,
          *, options: TrainOptions | None = None, encoding: str = "utf-8", sep: str = "auto",
          shard_bytes: int = DEFAULT_SHARD_BYTES, progress: Progress | None = None,
          **option_values: Any) -> Model:
    """Train a model on the cluster from files or a ``dask.bag`` of sequences.

    ``patterns``: a pattern file or parsed patterns. ``paths_or_bag``: a path,
    a glob pattern or a list of them (files the workers can read, cut into
    shards of about ``shard_bytes``), or a bag whose items are sequences
    (:class:`crfkit.io.reader.Sequence` or lists of rows, the label last).
    ``option_values`` are :class:`crfkit.training.train.TrainOptions` fields
    (``maxiter=50``, ``rho1=0.1``...).
    """
    from crfkit.dask import training
    from crfkit.dask.command import record_inputs

    client = default_client(client)
    pattern_file = None
    if not isinstance(patterns, list):
        pattern_file = patterns
        patterns = read_patterns(patterns, encoding=encoding)
    options = options or TrainOptions(**option_values)
    train_file = None
    if hasattr(paths_or_bag, "to_delayed"):
        sources = client.compute(paths_or_bag.to_delayed())
        source = "<bag>"
    else:
        files = expand_inputs(paths_or_bag)
        sources = plan_shards(files, shard_bytes, encoding=encoding)
        source = files[0] if len(files) == 1 else str(paths_or_bag)
        if isinstance(paths_or_bag, (str, os.PathLike)):
            train_file = paths_or_bag
    model = training.train(client, patterns, sources, options, progress=progress,
                           source=source, encoding=encoding, sep=sep)
    record_inputs(model, pattern_file, train_file, encoding)  # as crfkit train does
    return model


def label(model: Model, bag: Any, client: Any = None, **options: Any) -> Any:
    """A ``dask.bag`` of the predicted label lists of ``bag``'s sequences (lazy).

    ``options`` are those of :func:`crfkit.labelling.label.label` (``nbest``...); each item of
    the result is what that function gives for the item's sequence. The model is sent
    to the workers once (scattered), not written into every task of the graph.
    """
    from crfkit.dask.labelling import label_partition

    model_future = default_client(client).scatter(model, broadcast=True, hash=False)
    return bag.map_partitions(label_partition, model_future, options)
