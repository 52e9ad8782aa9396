"""Connecting to a Dask cluster, and waiting for results while watching for lost workers.

``--dask ADDRESS`` connects to a running scheduler (``tcp://host:8786``);
``--dask local:N`` starts a ``LocalCluster`` of N worker processes on this
machine (the cores shared among them) and closes it afterwards. The
Python API takes a ``client=`` and falls back to Dask's default client.

A result lost with a worker is reported as :class:`LostResult`: the
trainers then remake what was lost on the workers that remain and repeat
the step (Dask cannot always do it alone: it forgets the tasks that made a
held result once the result exists). With no worker left a computation
would wait forever: :class:`Watch` turns that into :class:`NoWorkers`
after a grace period; a lost scheduler (its state with it) is
:class:`NoWorkers` at once. The trainers turn those into a stop that keeps
the last finished iteration.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from concurrent.futures import CancelledError
from contextlib import contextmanager
from typing import Any

from crfkit.config import cores
from crfkit.errors import CrfkitError, UsageError

NO_WORKER_GRACE = 10.0  # seconds without any worker before giving up
CONNECT_TIMEOUT = 5.0  # seconds to open a TCP connection to the scheduler
_POLL = 0.5


class NoWorkers(CrfkitError):
    """No Dask worker is left to compute on (or a task killed every worker it ran on,
    or the scheduler is gone)."""


class LostResult(NoWorkers):
    """A result was lost with a worker while others remain: it can be made again."""


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
        cluster = LocalCluster(n_workers=n, threads_per_worker=max(1, cores() // n),
                               processes=True, dashboard_address=":0",
                               silence_logs=logging.ERROR, host="127.0.0.1")
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    _probe(address)
    quiet_lost_scheduler_noise()
    try:
        client = Client(address, timeout=30)
    except (OSError, TimeoutError) as err:
        raise UsageError(f"--dask {address}: cannot reach the scheduler ({err})") from None
    try:
        yield client
    finally:
        _close(client)


# distributed's own lines when the scheduler goes away (logger -> message start): a lost
# scheduler is crfkit's one error line. Under load the client's 30 s give-up can come
# first, and futures released after the loss (the model of the last iteration being
# written) make its batched sender log the closed connection with a traceback.
LOST_SCHEDULER_NOISE = {"distributed.client": "Failed to reconnect",
                        "distributed.batched": "Batched Comm Closed"}


class _Dropping(logging.Filter):
    """Drops the records whose message starts with ``start``."""

    def __init__(self, start: str) -> None:
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.start)


def quiet_lost_scheduler_noise() -> None:
    """Drop :data:`LOST_SCHEDULER_NOISE` from distributed's loggers (once per logger)."""
    for name, start in LOST_SCHEDULER_NOISE.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _Dropping) and f.start == start for f in logger.filters):
            logger.addFilter(_Dropping(start))


def _probe(address: str) -> None:
    """Fail at once, not after the client's 30 s of retries, when nothing listens at a
    ``tcp://host:port`` address (other protocols go straight to the client)."""
    if not address.startswith("tcp://"):
        return
    host, _, port = address[len("tcp://"):].rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT):
            return
    except ValueError:
        raise UsageError(f"--dask {address}: expected tcp://HOST:PORT") from None
    except OSError as err:
        raise UsageError(f"--dask {address}: cannot reach the scheduler ({err})") from None


def _close(client: Any) -> None:
    """Close the client; one whose scheduler is gone must not wait for it, nor say so."""
    if client.status == "running":
        client.close()
        return
    for name in list(logging.root.manager.loggerDict):  # its reconnection's tracebacks
        if name.split(".")[0] == "distributed":
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    try:
        client.close(timeout=1)
    except (OSError, TimeoutError, RuntimeError):
        pass


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
    """The scheduler's workers; :class:`NoWorkers` when the scheduler itself is gone."""
    if getattr(client, "status", "running") != "running":
        raise NoWorkers("lost the Dask scheduler (its state with it)")
    return len(client.scheduler_info(n_workers=-1).get("workers", ()))


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
            # OSError: distributed's CommClosedError, or no worker to choose; KeyError: the
            # worker the scheduler chose left before the data was recorded on it
            except (OSError, KeyError) as err:
                n_workers(self.client)  # a lost scheduler ends it at once
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
                if lost and n_workers(self.client):
                    raise LostResult(f"a Dask result was lost ({lost[0].key})") from None
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
                raise LostResult("a result was lost with the workers that held it") from None
            except OSError as err:  # the scheduler's connection closed under the gather
                n_workers(self.client)
                raise LostResult(f"a Dask connection closed ({err})") from None

    def _wait(self, futures: list) -> list:
        from distributed import wait

        wait(futures, timeout=_POLL)
        return futures
