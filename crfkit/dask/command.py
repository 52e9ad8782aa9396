"""``crfkit train --dask`` and ``crfkit label --dask``: the CLI's calls into crfkit.dask."""

from __future__ import annotations

import os
from typing import Any, TextIO

from crfkit.dask.cluster import connect
from crfkit.dask.shards import DEFAULT_SHARD_BYTES, expand_inputs, plan_shards
from crfkit.errors import UsageError
from crfkit.labelling.label import LabelOptions, LabelStats
from crfkit.model.model import Model


def train_on_dask(address: str, given: dict, pattern_file: str | None, input_file: str,
                  devel_file: str | None, init_file: str | None, *, sep: str, encoding: str,
                  quiet: bool) -> tuple[Model, str | None]:
    """What ``crfkit.cli._train`` does, with the corpus read and encoded on the cluster;
    and the cluster's error when it ended training early (the model is then that of the
    last finished iteration)."""
    from crfkit.dask.training import refuse_unavailable, train
    from crfkit.features.patterns import read_patterns
    from crfkit.io.reader import read_sequences
    from crfkit.progress import Progress
    from crfkit.training.train import TrainOptions

    if init_file is not None:
        raise UsageError("-m/--model (continuing from a model) is not available with --dask")
    if given.get("max_memory") is not None:
        raise UsageError("--max-memory is not available with --dask (each worker holds a "
                         "part of the corpus)")
    options = TrainOptions(**{k: v for k, v in given.items() if v is not None})
    options.validate()
    if pattern_file is None:
        raise UsageError("give a pattern file with -p/--pattern")
    patterns = read_patterns(pattern_file, encoding=encoding)
    refuse_unavailable(patterns, options)  # before a cluster is started or reached
    files = expand_inputs(input_file)
    shards = plan_shards(files, DEFAULT_SHARD_BYTES, encoding=encoding)
    devel = None
    if devel_file is not None:
        devel = read_sequences(devel_file, encoding=encoding, sep=sep, min_columns=2)
    progress = Progress(quiet=quiet)
    failures: list[str] = []
    with connect(address) as client:
        model = train(client, patterns, shards, options, progress=progress, source=input_file,
                      encoding=encoding, sep=sep, devel=devel,
                      devel_source=devel_file or "<devel>", failures=failures)
    record_inputs(model, pattern_file, input_file, encoding, devel_file)
    return model, (failures[0] if failures else None)


def record_inputs(model: Any, pattern_file: Any, train_file: Any, encoding: str,
                  devel_file: Any = None) -> None:
    """The inputs ``crfkit train`` records in a model's info (so that a model trained on
    the cluster is the same file whichever way it was started)."""
    from crfkit.io.reader import canonical_encoding

    if pattern_file is None and train_file is None:
        return  # nothing was read from a file: no encoding to remember either
    if pattern_file is not None:
        model.info["pattern_file"] = os.fspath(pattern_file)
    if train_file is not None:
        model.info["train_file"] = os.fspath(train_file)
    model.info["encoding"] = canonical_encoding(encoding)
    if devel_file is not None:
        model.info["devel_file"] = os.fspath(devel_file)


def label_on_dask(address: str, model: Model, input_file: str, out: TextIO,
                  options: LabelOptions, *, encoding: str, sep: str) -> LabelStats:
    """Label ``input_file`` on the cluster into ``out`` (:mod:`crfkit.dask.labelling`)."""
    from crfkit.dask.labelling import LABEL_SHARD_BYTES, label_file

    shards = plan_shards(expand_inputs(input_file), LABEL_SHARD_BYTES, encoding=encoding)
    with connect(address) as client:
        return label_file(client, model, shards, out, options, encoding=encoding, sep=sep)
