"""crfkit.sklearn against sklearn-crfsuite on the sklearn-crfsuite tutorial, in one run.

    python scripts/bench_sklearn.py [--data DIR] [--encoding utf-8] [--iterations 100]
                                    [--tokens 1000000]

1. The tutorial as its users run it: CoNLL-2002 Spanish NER (esp.train to
   train, esp.testb to test), its ``word2features`` dicts and
   ``CRF(algorithm='lbfgs', c1=0.1, c2=0.1, max_iterations=100,
   all_possible_transitions=True)``, once with ``sklearn_crfsuite.CRF`` and
   once with ``crfkit.sklearn.CRF`` -- each fit in its own process, so each
   peak RSS (``ru_maxrss``: data, features and training) is its own. If
   sklearn-crfsuite does not work with the installed scikit-learn, python-crfsuite
   is driven directly as sklearn-crfsuite drives it (the report says which).
   Both are scored by the same conlleval (entity F1) and by the tutorial's
   weighted token F1 without ``O``.
2. The same features written as a CRFsuite data file and trained with
   ``crfkit train --format crfsuite -1 0.1 -2 0.2 -i 100``: the weights must
   equal the Python path's (c2 is CRFsuite's, rho2 = 2 c2).
3. ``--tokens`` tokens with 50 real-valued features per token, given as one
   numpy array per sequence of 20 tokens: the peak RSS of a fit.

Timings are wall-clock on whatever else the machine runs: say so when quoting (the
report gives the load average at start and end). With Linux's autogroup scheduling
(``/proc/sys/kernel/sched_autogroup_enabled``), a busy machine shares its cores between
sessions, not threads: crfkit's two threads then get no more CPU than
python-crfsuite's one, and the wall ratio tends to the CPU ratio. ``fit_stages`` splits
crfkit's fit into its stages (wall and CPU seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARAMS = {"algorithm": "lbfgs", "c1": 0.1, "c2": 0.1, "all_possible_transitions": True}


def read_conll(path: str, encoding: str = "utf-8") -> list[list[tuple[str, str, str]]]:
    """Sentences of (word, POS, tag) rows. The files crfkit ships are UTF-8 (NLTK's copy
    is latin-1: pass --encoding); decoding is strict, so a wrong encoding fails loudly
    instead of turning every accented word into other features."""
    sents, cur = [], []
    with open(path, encoding=encoding) as handle:
        for line in handle:
            parts = line.split()
            if not parts:
                if cur:
                    sents.append(cur)
                cur = []
            else:
                cur.append(tuple(parts))
    if cur:
        sents.append(cur)
    return sents


def word2features(sent, i):  # the sklearn-crfsuite tutorial's, unchanged
    word = sent[i][0]
    postag = sent[i][1]
    features = {
        "bias": 1.0,
        "word.lower()": word.lower(),
        "word[-3:]": word[-3:],
        "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(),
        "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(),
        "postag": postag,
        "postag[:2]": postag[:2],
    }
    if i > 0:
        word1 = sent[i - 1][0]
        postag1 = sent[i - 1][1]
        features.update({
            "-1:word.lower()": word1.lower(),
            "-1:word.istitle()": word1.istitle(),
            "-1:word.isupper()": word1.isupper(),
            "-1:postag": postag1,
            "-1:postag[:2]": postag1[:2],
        })
    else:
        features["BOS"] = True
    if i < len(sent) - 1:
        word1 = sent[i + 1][0]
        postag1 = sent[i + 1][1]
        features.update({
            "+1:word.lower()": word1.lower(),
            "+1:word.istitle()": word1.istitle(),
            "+1:word.isupper()": word1.isupper(),
            "+1:postag": postag1,
            "+1:postag[:2]": postag1[:2],
        })
    else:
        features["EOS"] = True
    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]


def sent2labels(sent):
    return [label for _, _, label in sent]


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss() -> int:
    """Peak resident set size of this process so far, in bytes (Linux: ru_maxrss in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def scores(y_test, y_pred) -> dict:
    from sklearn.metrics import f1_score

    from crfkit.sklearn.metrics import chunk_f1_score, flatten

    gold, pred = flatten(y_test), flatten(y_pred)
    labels = sorted(set(gold) - {"O"})
    return {"entity_f1": 100.0 * chunk_f1_score(y_test, y_pred),
            "token_f1_weighted": 100.0 * f1_score(gold, pred, average="weighted",
                                                  labels=labels, zero_division=0)}


# --- workers (one process each) ------------------------------------------------------------
def worker_tutorial(args) -> dict:
    train = read_conll(os.path.join(args.data, "esp.train"), args.encoding)
    test = read_conll(os.path.join(args.data, "esp.testb"), args.encoding)
    X_train = [sent2features(s) for s in train]
    y_train = [sent2labels(s) for s in train]
    X_test = [sent2features(s) for s in test]
    y_test = [sent2labels(s) for s in test]
    params = dict(PARAMS, max_iterations=args.iterations)
    result = {"library": args.worker}
    if args.worker == "crfkit":
        from crfkit.sklearn import CRF

        crf = CRF(**params)
        stages = StageClock()
        start, cpu = time.perf_counter(), cpu_seconds()
        crf.fit(X_train, y_train)
        result["fit_seconds"] = time.perf_counter() - start
        result["fit_cpu_seconds"] = cpu_seconds() - cpu
        result["fit_stages"] = stages.report(result["fit_seconds"], result["fit_cpu_seconds"])
        result["peak_rss_fit"] = peak_rss()
        result["iterations"] = len(crf.training_log_.iterations)
        y_pred = crf.predict(X_test)
        if args.model_out:
            crf.tagger_.model.save(args.model_out)
        if args.data_out:
            write_crfsuite_file(args.data_out, X_train, y_train)
    else:
        fit_seconds, fit_cpu, y_pred, how = fit_crfsuite(params, X_train, y_train, X_test)
        result.update(fit_seconds=fit_seconds, fit_cpu_seconds=fit_cpu,
                      peak_rss_fit=peak_rss(), driven=how)
    result.update(scores(y_test, y_pred))
    result["tokens"] = sum(map(len, y_train))
    return result


class StageClock:
    """Wall and CPU seconds of each stage of crfkit's fit, by wrapping the functions that
    ``crfkit.sklearn.CRF.fit`` calls (a few calls each, and one per evaluation: no
    measurable cost). "rest" is the fit minus the stages: the import of Numba and the
    loading of compiled kernels, the model, the log."""

    STAGES = {"encode": "dicts -> attribute ids", "label_ids": "labels -> ids",
              "frequency_order": "vocabulary in frequency order",
              "attribute_space": "feature space, gold totals (and Numba's first kernel load)",
              "evaluations": "L-BFGS objective evaluations"}

    def __init__(self) -> None:
        from crfkit.attributes import (
            attribute_model as attributes,  # (imports no Numba: fit does, and pays for it)
        )

        self.seconds: dict[str, list[float]] = {name: [0.0, 0.0, 0] for name in self.STAGES}
        for name in ("encode", "label_ids", "frequency_order", "attribute_space"):
            setattr(attributes, name, self.timed(getattr(attributes, name), name))
        space = attributes.attribute_space  # (timed above) runs after fit imported Numba

        def attribute_space(*args, **kwargs):
            from crfkit.kernels.objective import Objective  # already loaded: free

            if not getattr(Objective.__call__, "timed", False):
                Objective.__call__ = self.timed(Objective.__call__, "evaluations")
            return space(*args, **kwargs)

        attributes.attribute_space = attribute_space

    def timed(self, func, name: str):
        def wrapper(*args, **kwargs):
            start, cpu = time.perf_counter(), cpu_seconds()
            try:
                return func(*args, **kwargs)
            finally:
                row = self.seconds[name]
                row[0] += time.perf_counter() - start
                row[1] += cpu_seconds() - cpu
                row[2] += 1
        wrapper.timed = True
        return wrapper

    def report(self, wall: float, cpu: float) -> dict:
        rows = {name: {"wall": w, "cpu": c, "calls": n, "what": self.STAGES[name]}
                for name, (w, c, n) in self.seconds.items()}
        rows["rest"] = {"wall": wall - sum(r["wall"] for r in rows.values()),
                        "cpu": cpu - sum(r["cpu"] for r in rows.values()), "calls": 1,
                        "what": "Numba import and kernel loading, setup, model, log"}
        return rows


def fit_crfsuite(params: dict, X_train, y_train, X_test) -> tuple[float, float, list, str]:
    """sklearn-crfsuite's CRF; python-crfsuite driven its way if that does not work."""
    try:
        import sklearn_crfsuite

        crf = sklearn_crfsuite.CRF(**params)
        start, cpu = time.perf_counter(), cpu_seconds()
        crf.fit(X_train, y_train)
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        return seconds, cpu, list(crf.predict(X_test)), "sklearn_crfsuite.CRF"
    except Exception as err:  # noqa: BLE001 - any failure: fall back, and say why
        reason = f"{type(err).__name__}: {err}"
    import pycrfsuite

    with tempfile.TemporaryDirectory() as tmp:
        start, cpu = time.perf_counter(), cpu_seconds()
        trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
        for xseq, yseq in zip(X_train, y_train, strict=True):
            trainer.append(xseq, yseq)
        trainer.set_params({"c1": params["c1"], "c2": params["c2"],
                            "max_iterations": params["max_iterations"],
                            "feature.possible_transitions": True})
        trainer.train(os.path.join(tmp, "m.crfsuite"))
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        tagger = pycrfsuite.Tagger()
        tagger.open(os.path.join(tmp, "m.crfsuite"))
        y_pred = [tagger.tag(x) for x in X_test]
    return seconds, cpu, y_pred, f"python-crfsuite directly (sklearn-crfsuite failed: {reason})"


def write_crfsuite_file(path: str, X, y) -> None:
    from crfkit.attributes.data_file import write_sequences
    from crfkit.attributes.encoder import item_attributes

    with open(path, "w", encoding="utf-8") as out:
        write_sequences(out, ((yseq, [list(item_attributes(item)) for item in xseq])
                              for xseq, yseq in zip(X, y, strict=True)))


def worker_large(args) -> dict:
    from crfkit.sklearn import CRF

    rng = np.random.default_rng(0)
    T, D, L = 20, 50, 5
    n_seq = args.tokens // T
    proj = rng.normal(size=(D, L))
    X, y = [], []
    names = [f"L{k}" for k in range(L)]
    for _ in range(n_seq):
        x = rng.normal(size=(T, D))
        X.append(x)
        y.append([names[k] for k in np.argmax(x @ proj, axis=1)])
    data_rss = peak_rss()
    crf = CRF(c2=0.1, max_iterations=args.large_iterations)
    start = time.perf_counter()
    crf.fit(X, y)
    seconds = time.perf_counter() - start
    rss = peak_rss()
    accuracy = crf.score(X[:500], y[:500])
    return {"tokens": n_seq * T, "features_per_token": D, "fit_seconds": seconds,
            "peak_rss_fit": rss, "peak_rss_before_fit": data_rss,
            "iterations": len(crf.training_log_.iterations), "train_accuracy": accuracy}


# --- the run -----------------------------------------------------------------------------
def run_worker(name: str, args, *extra: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, "--data", args.data,
           "--iterations", str(args.iterations), "--tokens", str(args.tokens),
           "--large-iterations", str(args.large_iterations), "--encoding", args.encoding,
           *extra]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"the {name} worker failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare_cli(data_file: str, py_model_file: str, iterations: int) -> dict:
    from crfkit.attributes.attribute_model import AttributeModel, compacted

    with tempfile.TemporaryDirectory() as tmp:
        model_file = os.path.join(tmp, "cli.model")
        cmd = [os.path.join(os.path.dirname(sys.executable), "crfkit"), "train", "-q",
               "--format", "crfsuite", "-1", "0.1", "-2", "0.2", "-i", str(iterations),
               data_file, model_file]
        start = time.perf_counter()
        subprocess.run(cmd, check=True)
        seconds = time.perf_counter() - start
        # the estimator keeps only non-zero weights (as CRFsuite); the CLI keeps all
        cli = compacted(AttributeModel.load(model_file))
        py = AttributeModel.load(py_model_file)
    same = cli.attributes == py.attributes and cli.labels == py.labels \
        and cli.weights.shape == py.weights.shape
    diff = float(np.max(np.abs(cli.weights - py.weights))) if same else float("inf")
    return {"command": " ".join(cmd[1:-2] + ["DATA", "MODEL"]), "seconds": seconds,
            "same_features": same, "max_weight_difference": diff}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data",
                                                       "conll2002"))
    parser.add_argument("--encoding", default="utf-8",
                        help="text encoding of the CoNLL-2002 files (default: utf-8)")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--large-iterations", type=int, default=20)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--model-out", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--data-out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "large":
        print(json.dumps(worker_large(args)))
        return
    if args.worker is not None:
        print(json.dumps(worker_tutorial(args)))
        return
    report: dict = {"load_average_at_start": os.getloadavg(), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        model_file, data_file = os.path.join(tmp, "py.model"), os.path.join(tmp, "train.crfsuite")
        report["crfsuite"] = run_worker("crfsuite", args)
        report["crfkit"] = run_worker("crfkit", args, "--model-out", model_file,
                                      "--data-out", data_file)
        report["cli_format_crfsuite"] = compare_cli(data_file, model_file, args.iterations)
    if not args.skip_large:
        report["large"] = run_worker("large", args)
    a, b = report["crfkit"], report["crfsuite"]
    report["bar"] = {
        "entity_f1_difference": a["entity_f1"] - b["entity_f1"],
        "fit_wall_ratio": a["fit_seconds"] / b["fit_seconds"],
        "fit_cpu_ratio": a["fit_cpu_seconds"] / b["fit_cpu_seconds"],
        "peak_rss_ratio": a["peak_rss_fit"] / b["peak_rss_fit"],
        "cli_weights_equal_1e-9": report["cli_format_crfsuite"]["max_weight_difference"] <= 1e-9,
    }
    if "large" in report:
        report["bar"]["large_peak_rss_gb"] = report["large"]["peak_rss_fit"] / 1e9
    report["load_average_at_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
