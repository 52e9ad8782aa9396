"""The CRF++ and Wapiti columns of ``scripts/bench.py``.

Both tools are built from the unmodified sources in ``shared/peers`` by its
``build.sh`` (CRF++ 0.59, Wapiti 1.5.0), which prints ``NAME=PATH`` lines.
Each gets the features, regularisation, stopping rule and thread count of
the crfkit run, mapped from each tool's own source (read for these facts):

objective
    crfkit minimises ``-LL + rho1 |w|_1 + rho2/2 |w|^2``. Wapiti's
    ``gradient.c`` adds ``rho1 |w|_1 + rho2/2 |w|^2``: the same numbers, ``-1
    RHO1 -2 RHO2`` (``-1 0`` must be given: Wapiti's default is 0.5).
    CRF++'s ``encoder.cpp`` adds ``|w|^2 / (2C)`` (``-a CRF-L2``) or ``|w|_1 / C``
    (``-a CRF-L1``), so ``-c 1/RHO2`` for L2 and ``-c 1/RHO1`` for L1; it has
    no elastic net, so CRF++ is left out when both terms are set. (CRFsuite,
    in ``bench.py``: ``-LL + c1 |w|_1 + c2 |w|^2``, so ``c1 = RHO1``, ``c2 =
    RHO2/2``.)
features
    The same pattern file. Wapiti reads crfkit's syntax as is (``u``/``b``/``*``,
    ``%x``). CRF++ templates know ``U`` and ``B`` lines only: each ``u`` line
    becomes a ``U`` line, each ``b`` line a ``B`` line and each ``*`` line both
    (the same observation, once per kind), so CRF++ gets the same
    observations. ``%X`` commands, and tests and matches of the current
    token, reach CRF++ as extra columns (``bench_columns.py``), written before
    it starts and not timed; other commands are refused for CRF++.
    Which (observation, label) pairs get a weight differs by design: crfkit
    and CRFsuite keep the pairs seen in training, CRF++ and Wapiti every
    label for every observation (the ``features`` row shows the counts).
stopping rule
    crfkit, CRFsuite and Wapiti stop when the objective improved by less than
    ``stopeps`` (relative) over the last ``stopwin`` iterations (Wapiti: ``-e``
    and ``-o``). Wapiti's ``-w`` window (default 5) adds a second rule, on the
    token error rate (of the development data, else the training data) moving
    by less than ``-e`` points over the window; ``-w 0`` turns it off. CRF++ stops after three
    consecutive iterations each improving by less than its ``-e``: it gets
    ``stopeps / stopwin``, the same average rate. ``--maxiter`` caps every
    tool (CRF++ ``-m``, Wapiti ``-i``).
threads
    Every tool that can use threads gets the same count (``--threads``, 0:
    all cores): crfkit ``-t``, Wapiti ``-t``, CRF++ ``-p``. CRFsuite has one
    thread. Labelling: crfkit ``-t``; ``crf_test`` and ``wapiti label`` have
    one thread.

Iterations: Wapiti prints one progress line per L-BFGS iteration. CRF++
prints a line per objective evaluation (its line search's trial points
included), so its ``iterations`` are evaluations. ``s / iteration`` is the
wall time between the first and last progress line (timestamped as the
lines arrive) divided by the lines between them: start-up and feature
generation are left out, as for crfkit and CRFsuite. ``iteration_s`` has
each iteration's seconds from the tool's own log (``bench_iterations.py``).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import bench_columns
from bench_iterations import durations, wapiti_iteration_s

PEERS = ("crf++", "wapiti")
_NAME_PATH = re.compile(r"^(\w[\w+-]*)=(\S.*)$")
_CRFPP_PROGRESS = re.compile(r"^iter=(\d+) .*obj=(\S+)")
_CRFPP_FEATURES = re.compile(r"^Number of features:\s*(\d+)", re.MULTILINE)
_WAPITI_PROGRESS = re.compile(r"^\s*\[\s*(\d+)\] obj=(\S+)")
_WAPITI_FEATURES = re.compile(r"nb features:\s*(\d+)")
_ACTIVE = re.compile(r"\bact=(\d+)")
MB = 1024 * 1024


class PeerUnavailable(Exception):
    """A peer cannot run this configuration (unbuilt, unsupported pattern or setting)."""


def build_peers(script: Path) -> dict[str, str]:
    """Run ``build.sh`` (a no-op once built) and return its ``NAME=PATH`` lines."""
    if not script.is_file():
        raise PeerUnavailable(f"no build script at {script}")
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PeerUnavailable(f"{script} failed: {done.stderr.strip()[-300:]}")
    paths = {}
    for line in done.stdout.splitlines():
        match = _NAME_PATH.match(line.strip())
        if match:
            paths[match.group(1)] = match.group(2)
    return paths


def crfpp_template(patterns: list, n_columns: int) -> tuple[str, list[tuple]]:
    """CRF++'s template for crfkit ``patterns`` (module docstring), and its derived columns.

    ``n_columns`` is the number of observation columns. A ``%X`` command, and
    a ``%t``/``%T``/``%m``/``%M`` command reading the current token, reads the
    derived column :func:`bench_columns.write_derived` fills (column
    ``n_columns + k`` for the k-th transform returned). A test or match of a
    neighbour is refused: out of the sequence crfkit gives it ``false`` or an
    empty string, CRF++ its padding token, so the features would differ.
    """
    transforms: list[tuple] = []
    lines = []
    for pattern in patterns:
        spellings = []
        for command in pattern.commands:
            if command.absolute or (command.letter not in "xX" and command.offset != 0):
                raise PeerUnavailable(
                    f"line {pattern.line}: CRF++ gets {command.spelling!r} only as a derived "
                    "column, which is exact for relative %x/%X commands and for tests or "
                    "matches of the current token")
            column = command.column
            if command.letter != "x":
                if command.transform not in transforms:
                    transforms.append(command.transform)
                column = n_columns + transforms.index(command.transform)
            spellings.append(f"%x[{command.offset},{column}]")
        body = pattern.render(spellings)[1:]
        if pattern.has_unigram:
            lines.append("U" + body)
        if pattern.has_bigram:
            lines.append("B" + body)
    return "\n".join(lines) + "\n", transforms


@dataclass
class TimedRun:
    """A finished child process: wall time, peak RSS, its output and progress-line times."""

    wall_s: float
    max_rss_mb: float
    output: str
    progress: list[tuple[float, int]]  # (seconds since start, iteration number)


GNU_TIME = "/usr/bin/time"


def rss_prefix(report: Path) -> list[str]:
    """A prefix that makes GNU time write the command's peak RSS (KiB) to ``report``.

    ``ru_maxrss`` from ``os.wait4`` cannot be used alone for small programs:
    Linux carries a process's peak RSS across ``exec``, so a child forked
    from this Python process (~50-90 MB with crfkit imported) never reports
    less than the parent had (``crf_test`` showed 48 MB). GNU time forks the
    command from its own small process and reports the command alone.
    Without GNU time, the prefix is empty and :func:`peak_rss_mb` falls back.
    """
    if os.access(GNU_TIME, os.X_OK):
        return [GNU_TIME, "-f", "%M", "-o", str(report)]
    return []


def peak_rss_mb(report: Path, wait4_kib: int) -> float:
    """The peak RSS GNU time wrote to ``report`` (last line), else ``wait4``'s figure."""
    try:
        last = report.read_text(encoding="utf-8").strip().splitlines()[-1]
        kib = int(last)
    except (OSError, IndexError, ValueError):
        kib = wait4_kib
    return kib * 1024 / MB


def run_timed(cmd: list[str], workdir: Path, progress: re.Pattern, *,
              stdout_path: Path | None = None) -> TimedRun:
    """Run ``cmd``, timestamping each line that matches ``progress`` as it arrives.

    The progress stream is stdout unless ``stdout_path`` is given (then stdout
    goes to that file and stderr is read). Peak RSS from ``os.wait4``.
    """
    sink = open(stdout_path, "wb") if stdout_path else None  # noqa: SIM115
    try:
        report = workdir / "peer-rss.txt"
        report.unlink(missing_ok=True)
        started = time.perf_counter()
        proc = subprocess.Popen([*rss_prefix(report), *cmd], cwd=workdir, text=True,
                                stdin=subprocess.DEVNULL,
                                stdout=sink if sink else subprocess.PIPE,
                                stderr=subprocess.PIPE if sink else subprocess.STDOUT)
        stream = proc.stderr if sink else proc.stdout
        lines, stamps = [], []
        for line in stream:
            lines.append(line)
            match = progress.match(line)
            if match:
                stamps.append((time.perf_counter() - started, int(match.group(1))))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    finally:
        if sink:
            sink.close()
    output = "".join(lines)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        tail = "\n".join(output.strip().splitlines()[-10:])
        raise PeerUnavailable(f"{' '.join(cmd)} failed (exit status {code}):\n{tail}")
    return TimedRun(wall, peak_rss_mb(report, usage.ru_maxrss), output, stamps)


def _iteration_figures(run: TimedRun) -> dict:
    """Iterations, s / iteration and the last progress line's non-zero weights (``act=``)."""
    figures: dict = {"iterations": len(run.progress)}
    active = _ACTIVE.findall(run.output)
    if active:
        figures["nonzero_weights"] = int(active[-1])
    if len(run.progress) >= 2:
        (t0, _), (t1, _) = run.progress[0], run.progress[-1]
        figures["s_per_iteration"] = (t1 - t0) / (len(run.progress) - 1)
    return figures


def train_crfpp(paths: dict, settings: dict, patterns: list, files: dict,
                workdir: Path) -> dict:
    """Train with ``crf_learn``; the figures bench.py shows (its keys) and the command."""
    rho1, rho2 = settings["rho1"], settings["rho2"]
    if rho1 > 0 and rho2 > 0:
        raise PeerUnavailable("CRF++ has no elastic net (both -1 and -2 set)")
    algo, cost = ("CRF-L1", 1 / rho1) if rho1 > 0 else ("CRF-L2", 1 / rho2 if rho2 else 1e12)
    first = next(bench_columns.read_column_file(files["train"]))
    text, transforms = crfpp_template(patterns, len(first[0]) - 1)
    template = workdir / "crfpp.template"
    template.write_text(text, encoding="utf-8")
    model = workdir / "crfpp.model"
    result: dict = {"derived_columns": transforms}
    train = peer_input(result, files["train"], workdir)
    cmd = [paths["crf_learn"], "-a", algo, "-c", repr(cost), "-f", "1",
           "-e", repr(settings["stopeps"] / settings["stopwin"]),
           "-p", str(settings["threads"]), "-m", str(settings["maxiter"] or 100000),
           str(template), str(train), str(model)]
    run = run_timed(cmd, workdir, _CRFPP_PROGRESS)
    features = _CRFPP_FEATURES.search(run.output)
    starts = [stamp for stamp, _ in run.progress]
    return {**result, "command": cmd, "iteration_s": durations(starts),
            "train_wall_s": run.wall_s, "train_process_wall_s": run.wall_s,
            "train_max_rss_mb": run.max_rss_mb, "model_mb": model.stat().st_size / MB,
            "features": int(features.group(1)) if features else None,
            "iterations_are": "objective evaluations", **_iteration_figures(run),
            "label_command": [paths["crf_test"], "-m", str(model)]}


def peer_input(result: dict, source: Path, workdir: Path) -> Path:
    """The file CRF++ reads for ``source``: with its derived columns (written once), if any."""
    transforms = result.get("derived_columns")
    if not transforms:
        return Path(source)
    known = result.setdefault("inputs", {})
    if str(source) not in known:
        dest = workdir / f"crfpp-{len(known)}-{Path(source).name}"
        bench_columns.write_derived([tuple(t) for t in transforms], source, dest)
        known[str(source)] = str(dest)
    return Path(known[str(source)])


def train_wapiti(paths: dict, settings: dict, pattern: Path, files: dict,
                 workdir: Path) -> dict:
    """Train with ``wapiti train -a l-bfgs``; figures as :func:`train_crfpp`."""
    model = workdir / "wapiti.model"
    cmd = [paths["wapiti"], "train", "-a", "l-bfgs", "-p", str(pattern),
           "-1", repr(settings["rho1"]), "-2", repr(settings["rho2"]),
           "-e", repr(settings["stopeps"]), "-o", str(settings["stopwin"]), "-w", "0",
           "--histsz", str(settings["history"]), "-t", str(settings["threads"]),
           "-i", str(settings["maxiter"]), str(files["train"]), str(model)]
    run = run_timed(cmd, workdir, _WAPITI_PROGRESS, stdout_path=workdir / "wapiti-train.out")
    features = _WAPITI_FEATURES.search(run.output)
    return {"command": cmd, "iteration_s": wapiti_iteration_s(run.output),
            "train_wall_s": run.wall_s, "train_process_wall_s": run.wall_s,
            "train_max_rss_mb": run.max_rss_mb, "model_mb": model.stat().st_size / MB,
            "features": int(features.group(1)) if features else None,
            **_iteration_figures(run),
            "label_command": [paths["wapiti"], "label", "-m", str(model)]}


def label(command: list[str], source: Path, output: Path, workdir: Path) -> TimedRun:
    """Label ``source`` into ``output`` (both tools append the predicted column)."""
    never = re.compile(r"(?!)")
    if command[0].endswith("crf_test"):
        return run_timed([*command, str(source)], workdir, never, stdout_path=output)
    return run_timed([*command, str(source), str(output)], workdir, never)
