"""Labelling on a Dask cluster: byte ranges out, labelled text back, written in order.

The input is cut into shards just after blank lines (:mod:`crfkit.dask.shards`);
each worker labels whole shards with the ordinary streaming labeller and
returns the text it would have written. The driver keeps at most
``window`` shards in flight and writes each shard's text as soon as every
shard before it is written, so its memory is bounded by the window, never
by the input. The model goes to every worker once (it pickles as its own
file format). A sequence never spans shards and labelling one sequence
does not depend on another, so the output is byte-identical to one
process; errors are raised at their line in the input, as one process
would report the first of them.
"""

from __future__ import annotations

import io
from collections import deque
from dataclasses import dataclass
from typing import Any, TextIO

from crfkit.dask.cluster import Watch
from crfkit.dask.shards import Shard, ShardReport, raise_first_error, shard_items
from crfkit.errors import CrfkitError
from crfkit.labelling.label import LabelOptions, LabelStats, label, label_stream
from crfkit.model.model import Model

LABEL_SHARD_BYTES = 4 << 20


@dataclass
class Labelled:
    text: str
    stats: LabelStats
    report: ShardReport


def label_shard(model: Model, shard: Shard, options: LabelOptions, encoding: str, sep: str
                ) -> Labelled:
    """Label one shard on a worker; errors come back as data (with shard-relative lines)."""
    report = ShardReport()
    out = io.StringIO()
    stats = LabelStats()
    try:
        stats = label_stream(model, shard_items(shard, encoding=encoding, sep=sep,
                                                min_columns=1, report=report),
                             out, options, source=shard.path)
    except CrfkitError as err:
        if report.error is None:
            report.error = (err.message, err.line)
    return Labelled(out.getvalue() if report.error is None else "", stats, report)


def label_file(client: Any, model: Model, shards: list[Shard], out: TextIO,
               options: LabelOptions, *, encoding: str, sep: str, window: int = 0
               ) -> LabelStats:
    """Label ``shards`` (in input order) on the cluster into ``out``; at most ``window``
    shards (default: twice the workers) are labelled or waiting to be written at once."""
    from crfkit.dask.cluster import n_workers

    watch = Watch(client)
    window = window or 2 * max(1, n_workers(client))
    model_future = client.scatter(model, broadcast=True, hash=False)
    pending: deque = deque()
    done: list[Shard] = []
    reports: list[ShardReport] = []
    total = LabelStats()
    todo = iter(shards)
    while True:
        while len(pending) < window:
            shard = next(todo, None)
            if shard is None:
                break
            pending.append((shard, client.submit(label_shard, model_future, shard, options,
                                                 encoding, sep, pure=False)))
        if not pending:
            return total
        shard, future = pending.popleft()
        result = watch.result(future)
        done.append(shard)
        reports.append(result.report)
        raise_first_error(done, reports)  # this shard's error, at its line in the file
        out.write(result.text)
        for key in ("sequences", "tokens", "correct"):
            setattr(total, key, getattr(total, key) + getattr(result.stats, key))
        del future, result


def label_partition(partition: list, model: Model, options: dict) -> list:
    """A bag partition's label lists (``crfkit.dask.label``)."""
    return [result.labels for result in label(model, partition, **options)]
