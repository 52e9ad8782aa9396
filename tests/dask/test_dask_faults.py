"""crfkit on a Dask cluster of real processes losing a worker or its scheduler.

Each test starts ``dask scheduler`` and ``dask worker --no-nanny`` processes
on the loopback interface (a worker killed with SIGKILL stays dead: no
nanny restarts it), runs ``crfkit train --dask`` as a process, and kills a
worker or the scheduler by PID once training has started. Every wait is
bounded, so a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import ADDRESS_PATTERNS
from tests.helpers import ROOT

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow

START_TIMEOUT = 60  # seconds for the cluster to come up (a loaded machine is slow)
RUN_TIMEOUT = 90  # seconds for one training command


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _spawn(*args: str, log: Path) -> subprocess.Popen:
    with log.open("w") as stderr:  # the child keeps its own copy of the descriptor
        return subprocess.Popen([sys.executable, "-m", *args], env=_env(),
                                stdout=subprocess.DEVNULL, stderr=stderr)


@contextmanager
def cluster(tmp_path: Path, n_workers: int):
    """A scheduler and ``n_workers`` nanny-less workers on 127.0.0.1: (address, scheduler
    process, worker processes); every process still alive is killed at the end."""
    from distributed import Client

    info = tmp_path / "scheduler.json"
    procs = [_spawn("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                    "--no-dashboard", "--scheduler-file", str(info),
                    log=tmp_path / "scheduler.log")]
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not info.exists():
            assert time.monotonic() < deadline and procs[0].poll() is None, "no scheduler"
            time.sleep(0.1)
        time.sleep(0.2)  # the file is written before it is complete
        address = json.loads(info.read_text())["address"]
        procs += [_spawn("distributed.cli.dask_worker", address, "--no-nanny", "--nthreads",
                         "1", "--no-dashboard", "--host", "127.0.0.1",
                         log=tmp_path / f"worker{i}.log") for i in range(n_workers)]
        with Client(address, timeout=START_TIMEOUT) as client:
            client.wait_for_workers(n_workers, timeout=START_TIMEOUT)
        yield address, procs[0], procs[1:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)


def train_killing(address: str, victim: subprocess.Popen | None, at: str, *args: object,
                  model: Path) -> tuple[int, str, float]:
    """``crfkit train --dask address``, ``victim`` killed (SIGKILL) when a progress line
    contains ``at``: (exit status, stderr, seconds from the kill to the exit)."""
    command = [sys.executable, "-m", "crfkit.cli", "train", "-p", str(ADDRESS_PATTERNS),
               "--dask", address, *map(str, args), str(model)]
    train = subprocess.Popen(command, env=_env(), stderr=subprocess.PIPE, text=True)
    lines = []
    killed_at = time.monotonic()
    try:
        with train.stderr:
            for line in train.stderr:
                lines.append(line)
                if victim is not None and at in line:
                    victim.send_signal(signal.SIGKILL)
                    killed_at = time.monotonic()
                    victim = None
        status = train.wait(timeout=RUN_TIMEOUT)
        return status, "".join(lines), time.monotonic() - killed_at
    finally:
        if train.poll() is None:
            train.kill()
            train.wait()


def _deadline(seconds: float):
    """A hang fails the test: SIGALRM raises in the test after ``seconds``."""
    def expire(*_):
        raise TimeoutError(f"no end within {seconds}s")
    signal.signal(signal.SIGALRM, expire)
    signal.alarm(int(seconds))


@pytest.fixture(autouse=True)
def bounded():
    _deadline(START_TIMEOUT + 2 * RUN_TIMEOUT)
    yield
    signal.alarm(0)


def test_a_killed_worker_is_replaced_by_the_others(address_sample, tmp_path):
    """Worker 1 of 3 dies between two iterations, and the scheduler has seen it go: its
    part is made again on the others (by Dask or, when Dask has forgotten how, by the
    driver: test_dask.py forces that case), training ends normally with the model of one
    thread, and a progress line says so."""
    import io

    from distributed import Client

    from crfkit.dask import training
    from crfkit.dask.shards import plan_shards
    from crfkit.features.patterns import read_patterns
    from crfkit.io.reader import read_sequences
    from crfkit.kernels.blocks import set_thread_count
    from crfkit.progress import Progress
    from crfkit.training.train import TrainOptions, train

    patterns = read_patterns(ADDRESS_PATTERNS)
    path = str(address_sample["train"])
    set_thread_count(1)
    expected = train(patterns, read_sequences(path, min_columns=2), TrainOptions(maxiter=6))
    with cluster(tmp_path, 3) as (address, _, workers), \
            Client(address, timeout=START_TIMEOUT) as client:

        class Killer(Progress):
            def iteration(self, it, *args, **kwargs):
                if it == 2:
                    workers[0].send_signal(signal.SIGKILL)
                    deadline = time.monotonic() + RUN_TIMEOUT
                    while len(client.scheduler_info(n_workers=-1)["workers"]) > 2:
                        assert time.monotonic() < deadline, "the scheduler kept the worker"
                        time.sleep(0.05)

        log = io.StringIO()
        got = training.train(client, patterns, plan_shards([path], 3000),
                             TrainOptions(maxiter=6), progress=Killer(log))
    # Dask remakes the part by itself when it still knows the tasks that made it
    assert "made again" in log.getvalue() or "lost, 2 left" in log.getvalue(), log.getvalue()
    assert got.info["stop_reason"] == expected.info["stop_reason"]
    assert got.to_bytes() == expected.to_bytes()


def test_a_killed_scheduler_ends_with_one_line_and_the_last_iteration(address_sample,
                                                                      tmp_path):
    with cluster(tmp_path, 2) as (address, scheduler, _):
        model = tmp_path / "dask.model"
        status, stderr, seconds = train_killing(address, scheduler, "[   2]", "-i", "500",
                                                "-e", "0", address_sample["train"],
                                                model=model)
    assert status != 0
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("crfkit: error")]
    assert len(errors) == 1 and "scheduler" in errors[0], stderr
    assert not [line for line in stderr.splitlines()
                if line and not line.startswith(("*", "  [", "crfkit: error"))], stderr
    from crfkit.model.model import Model

    assert Model.load(model).info["iterations"] >= 2
    # bounded: the end comes from the client's own loss of the scheduler (10-30 s,
    # depending on the machine's load), never from a hang
    assert seconds < 60, f"{seconds:.0f}s from the kill to the exit"


def test_a_refused_address_fails_at_once(address_sample, tmp_path):
    from tests.helpers import one_error_line, run

    started = time.monotonic()
    result = run("train", "-p", ADDRESS_PATTERNS, "--dask", "tcp://127.0.0.1:1",
                 address_sample["train"], tmp_path / "x.model")
    one_error_line(result, "tcp://127.0.0.1:1", "cannot reach the scheduler")
    assert time.monotonic() - started < 10


def test_distributeds_lost_scheduler_lines_are_dropped_and_nothing_else(caplog):
    """The records distributed logs when its scheduler goes away (its batched sender's
    traceback included: distributed/batched.py, client.py) never reach the user's
    stderr; its other records do."""
    import logging

    from crfkit.dask.cluster import quiet_lost_scheduler_noise

    noise = {"distributed.batched": "Batched Comm Closed <TCP (closed) Client->Scheduler>",
             "distributed.client": "Failed to reconnect to scheduler after 30.00 seconds, "
                                   "closing client"}
    quiet_lost_scheduler_noise()
    quiet_lost_scheduler_noise()  # once per logger, however often connected
    with caplog.at_level(logging.INFO):
        for name, line in noise.items():
            logger = logging.getLogger(name)
            assert len(logger.filters) == 1
            logger.warning(line)
            logger.warning("Receive client connection: %s", name)
    assert [r.getMessage() for r in caplog.records] == [
        f"Receive client connection: {name}" for name in noise]
