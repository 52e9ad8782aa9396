"""Connecting to a Dask cluster, and waiting for results while watching for lost workers.

``--dask ADDRESS`` connects to a running scheduler (``tcp://host:8786``);
``--dask local:N`` starts a ``LocalCluster`` of N worker processes on this
machine (the cores shared among them) and closes it afterwards. The
Python API takes a ``client=`` and falls back to Dask's default client.

Dask itself recomputes what a lost worker held (from the tasks that made
it, down to reading the shard from its file) on the workers that remain.
Only when none is left does a computation wait forever: :class:`Watch`
turns that into :class:`NoWorkers` after a grace period, and the trainers
into a stop that keeps the last finished iteration.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from concurrent.futures import CancelledError
from contextlib import contextmanager
from typing import Any

from crfkit.errors import CrfkitError, UsageError

NO_WORKER_GRACE = 10.0  # seconds without any worker before giving up
_POLL = 0.5


class NoWorkers(CrfkitError):
    """No Dask worker is left to compute on (or a task killed every worker it ran on)."""


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@contextmanager
def connect(address: str) -> Iterator[Any]:
    """A ``distributed.Client`` for ``address`` (or a local cluster for ``local:N``)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError("--dask needs Dask: pip install 'crfkit[dask]'") from None
    if address.startswith("local:"):
        try:
            n = int(address[len("local:"):])
        except ValueError:
            n = 0
        if n < 1:
            raise UsageError(f"--dask {address}: expected local:N with N >= 1 worker processes")
        cluster = LocalCluster(n_workers=n, threads_per_worker=max(1, _cores() // n),
                               processes=True, dashboard_address=":0",
                               silence_logs=logging.ERROR, host="127.0.0.1")
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = Client(address, timeout=30)
    except (OSError, TimeoutError) as err:
        raise UsageError(f"--dask {address}: cannot reach the scheduler ({err})") from None
    with client:
        yield client


def default_client(client: Any = None) -> Any:
    """``client``, or Dask's default client (dask-ml and LightGBM's convention)."""
    if client is not None:
        return client
    from distributed import default_client as current

    try:
        return current()
    except ValueError:
        raise UsageError("no Dask client: pass client= or create a distributed.Client "
                         "first") from None


def n_workers(client: Any) -> int:
    return len(client.scheduler_info(n_workers=-1)["workers"])


class Watch:
    """Waits for futures; :class:`NoWorkers` when there is no worker left to run them."""

    def __init__(self, client: Any, grace: float | None = None) -> None:
        self.client = client
        self.grace = NO_WORKER_GRACE if grace is None else grace

    def scatter(self, data: Any) -> Any:
        """``data`` on one worker (the tasks that need it fetch it from there); a worker
        that died unnoticed makes the scheduler pick another on the next try."""
        deadline = time.monotonic() + self.grace
        while True:
            try:
                return self.client.scatter(data, hash=False)
            except OSError as err:  # distributed's CommClosedError is one
                if time.monotonic() > deadline:
                    if not n_workers(self.client):  # the same end as gather's, same words
                        raise NoWorkers(f"no Dask worker left (cannot send data: {err})") \
                            from None
                    raise NoWorkers(f"cannot send data to any Dask worker ({err})") from None
                time.sleep(_POLL)

    def result(self, future: Any) -> Any:
        return self.gather([future])[0]

    def gather(self, futures: list) -> list:
        from distributed import KilledWorker

        alone_since = None
        while True:
            try:
                return self.client.gather(self._wait(futures))
            except TimeoutError:
                lost = [f for f in futures if f.status in ("lost", "cancelled")]
                if lost:
                    raise NoWorkers(f"a Dask result was lost ({lost[0].key}) and cannot be "
                                    "recomputed") from None
                if n_workers(self.client):
                    alone_since = None
                elif alone_since is None:
                    alone_since = time.monotonic()
                elif time.monotonic() - alone_since > self.grace:
                    raise NoWorkers(f"no Dask worker left (none for {self.grace:.0f}s)") from None
            except KilledWorker as err:
                raise NoWorkers(f"Dask workers kept dying while running a task ({err})") from None
            except CancelledError:  # distributed's FuturesCancelledError: its data was lost
                if not n_workers(self.client):
                    raise NoWorkers("no Dask worker left") from None
                raise NoWorkers("a result was lost with the workers that held it") from None

    def _wait(self, futures: list) -> list:
        from distributed import wait

        wait(futures, timeout=_POLL)
        return futures
