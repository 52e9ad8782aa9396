"""Plain helpers shared by the test modules: the CLI runner, the one-error-line assertion,
small random corpora. Imported as ``from tests.helpers import ...``; a test module never
imports from another test module. Fixtures built on these live in ``tests/conftest.py``,
the slow references (oracles) in ``tests/naive.py``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
from click.testing import CliRunner

from crfkit.cli import cli
from crfkit.features.patterns import parse_patterns
from crfkit.io.reader import Sequence
from crfkit.space import Dataset, FeatureSpace
from crfkit.structures.skipchain.bethe import BeliefPropagation
from crfkit.structures.skipchain.graph import graph_from_edges
from crfkit.structures.skipchain.space import SkipSpace

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CRFKIT_SHARED") or ROOT.parent / "shared")
"""The shared data folder (CoNLL-2000, the peer tools' models) a few tests read: beside
the repository, or where ``CRFKIT_SHARED`` says; without it those tests skip."""


def missing_shared(*paths: Path) -> str:
    """The skip reason naming the first of ``paths`` that does not exist ("" if all do)."""
    for path in paths:
        if not path.exists():
            return f"needs {path} (the shared data folder: set CRFKIT_SHARED=DIR)"
    return ""

# Every kind of weight: unigrams, observation bigrams, both (*), the transition block.
PATTERNS = parse_patterns("""
U00:%x[0,0]
U01:%x[-1,0]/%x[0,0]
u:suffix=%m[0,0,"\\a$"]
b:pos=%x[0,1]
*:next=%X[1,0]
B
""")


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` imported as a module (scripts/ is no package), once."""
    module_name = f"crfkit_script_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def run(*args: object, input: str | bytes | None = None):
    """Invoke the ``crfkit`` command line in-process (arguments passed through ``str``)."""
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


def eval_counts(report) -> tuple[int, int, int, int, int]:
    """(tokens, correct tags, gold chunks, found chunks, correct chunks) of an eval report."""
    o = report.overall
    return report.tokens, report.correct_tags, o.support, o.found, o.correct


def eval_per_type(report) -> dict[str, tuple[int, int, int]]:
    """type -> (support, found, correct) of an eval report."""
    return {t: (c.support, c.found, c.correct) for t, c in report.types.items()}


def one_error_line(result, *needles: str) -> str:
    """The failure is exactly one stderr line that names the place; no traceback. (The
    note of a first run that compiles kernels is not a failure: a test that happens to
    run first on a fresh cache sees it.)"""
    assert result.exit_code != 0
    lines = [line for line in result.stderr.splitlines()
             if line.strip() and not line.startswith("* compiling kernels")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output + result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def random_corpus(seed: int, n_seqs: int = 6, max_len: int = 4) -> list[Sequence]:
    """Tiny labelled sequences (word, tag, label) for :data:`PATTERNS`; 3 labels."""
    rng = np.random.default_rng(seed)
    words = ["a", "B", "c1", "dd", "E"]
    tags = ["N", "V"]
    labels = ["X", "Y", "Z"]
    seqs = []
    for _ in range(n_seqs):
        n = int(rng.integers(1, max_len + 1))
        rows = [[str(rng.choice(words)), str(rng.choice(tags)), str(rng.choice(labels))]
                for _ in range(n)]
        seqs.append(Sequence(rows=rows, lines=list(range(1, n + 1))))
    return seqs


# --- the one decoder and the one objective, addressed by model type name ----------------------
def type_objective(model_type: str, space, data, empirical, rho2: float):
    """The training objective of a model type (crfkit.kernels.objective.Objective)."""
    from crfkit.kernels.objective import Objective
    from crfkit.model.types import model_type as row

    return Objective(space, data, empirical, rho2, row(model_type).normalisation)


def decode_scored(model_type: str, weights, data, space):
    """Best label ids per token and each sequence's path score, by the one decoder."""
    from crfkit.kernels.bestpath import Weights
    from crfkit.kernels.decoder import decode
    from crfkit.model.types import model_type as row

    decoded = decode(Weights(space, weights, row(model_type).normalisation), data)
    return decoded.paths[:, 0], decoded.scores[:, 0]


def decode_best(model_type: str, weights, data, space):
    """Best label id of every token under a model of ``model_type`` (the one decoder)."""
    return decode_scored(model_type, weights, data, space)[0]


SKIP_PATTERNS = 'u:w=%x[0,0]\nu:p=%x[-1,0]\nB\ns:cap=%t[-1,0,"."]%m[0,0,"^\\u.*"]\n'


def skip_corpus(tmp_path: Path, documents: list[tuple[str, str, int]]) -> tuple[Path, Path]:
    """A tiny skip-chain training file and pattern file: one document a
    ``(name, label, n)``, whose ``n`` sentences each mention the name (so its
    repeats are joined by the pattern's capitalised-word key)."""
    lines = []
    for name, label, n in documents:
        lines.append("-DOCSTART- X O")
        for before in ["met", "in", "saw"][:n]:
            lines += [f"We N O\n{before} V O\n{name} N B-{label}\ntoday N O", ""]
    data = tmp_path / "train.txt"
    data.write_text("\n".join(lines) + "\n")
    pat = tmp_path / "skip.pat"
    pat.write_text(SKIP_PATTERNS)
    return data, pat


# --- skip-chain problems: tiny document graphs for the BP kernels ---------------------------
TIGHT = BeliefPropagation(maxiter=2000, tol=1e-13, damping=0.3)


def make_problem(lengths, docs, edges, L, n_skip=1, scale=1.0, skip_scale=1.0, seed=0):
    """(space, data, graph, W) for sequences of ``lengths``; ``docs`` the first sequence of
    each document; ``edges`` (i, j, pattern) in global token indices."""
    rng = np.random.default_rng(seed)
    N = int(sum(lengths))
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    space = SkipSpace(n_labels=L, u_ptr=np.arange(N + 1, dtype=np.int64) * L,
                      u_lab=np.tile(np.arange(L, dtype=np.int32), N),
                      b_ptr=np.zeros(N + 1, dtype=np.int64),
                      b_prev=np.zeros(0, dtype=np.int32), b_cur=np.zeros(0, dtype=np.int32),
                      has_trans=True, n_skip=n_skip)
    data = Dataset(seq_ptr=seq_ptr, tok_ptr=np.arange(N + 1, dtype=np.int64),
                   tok_obs=np.arange(N, dtype=np.int32),
                   labels=rng.integers(0, L, N).astype(np.int32))
    doc_ptr = np.array(list(docs) + [len(lengths)], dtype=np.int64)
    e = np.array(edges, dtype=np.int64).reshape(-1, 3)
    graph = graph_from_edges(doc_ptr, seq_ptr, e[:, 0], e[:, 1], e[:, 2])
    W = rng.normal(0, scale, space.n_weights)
    W[space.skip_offset:] = rng.normal(0, skip_scale, n_skip * L * L)
    return space, data, graph, W


def valued_problem(seed: int, *, bigrams: bool, trans: bool, L: int = 3):
    """A random space (every observation x label; some observation bigrams) and a
    labelled dataset of 3 sequences with random values per occurrence."""
    rng = np.random.default_rng(seed)
    n_obs = 5
    u_keys = np.arange(n_obs * L, dtype=np.int64)
    b_keys = np.sort(rng.choice(n_obs * L * L, size=8, replace=False)) if bigrams \
        else np.empty(0, dtype=np.int64)
    space = FeatureSpace.from_keys(u_keys, b_keys, n_obs, L, trans)
    lengths = [3, 1, 2]
    counts = rng.integers(0, 3, size=sum(lengths))
    tok_ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=tok_ptr[1:])
    data = Dataset(seq_ptr=np.cumsum([0] + lengths).astype(np.int64), tok_ptr=tok_ptr,
                   tok_obs=rng.integers(0, n_obs, size=tok_ptr[-1]).astype(np.int32),
                   labels=rng.integers(0, L, size=sum(lengths)).astype(np.int32),
                   tok_val=rng.normal(size=tok_ptr[-1]))
    W = rng.normal(size=space.n_weights)
    return space, data, W


def toy_corpus(n: int = 40, seed: int = 0):
    """Determiner-noun-verb sentences whose tags follow from the words."""
    rng = np.random.default_rng(seed)
    words = {"D": ["the", "a"], "N": ["dog", "cat", "bird"], "V": ["runs", "sleeps"]}
    X, y = [], []
    for _ in range(n):
        tags = ["D", "N", "V"] if rng.random() < 0.7 else ["N", "V"]
        X.append([{"w": str(rng.choice(words[t])), "len": len(t) / 2.0, "bias": 1.0}
                  for t in tags])
        y.append(tags)
    return X, y

# Three tagged sentences (word, part of speech, chunk tag): the smallest chunking corpus.
CHUNK_TRAIN = ("the DT B-NP\ncat NN I-NP\nsat VBD B-VP\non IN O\nthe DT B-NP\nmat NN I-NP\n\n"
               "a DT B-NP\ndog NN I-NP\nran VBD B-VP\n\nbig JJ B-NP\ndogs NNS I-NP\n"
               "bark VBP B-VP\n")


def trained_model(folder: Path, patterns: str, train: str, *options: object) -> Path:
    """Train a model by the CLI on the texts given (written into ``folder`` as ``p.pat`` and
    ``train.txt``); its path, ``folder/m.model``."""
    (folder / "p.pat").write_text(patterns)
    (folder / "train.txt").write_text(train)
    model = folder / "m.model"
    result = run("train", "-q", "-p", folder / "p.pat", *options, folder / "train.txt", model)
    assert result.exit_code == 0, result.stderr
    return model


def rosenbrock_sum(x: np.ndarray, g: np.ndarray) -> float:
    """A sum of 2-d Rosenbrock functions (x holds the pairs interleaved): curved valleys
    and gradients that change sign, a hard small objective for the optimisers."""
    a, b = x[0::2], x[1::2]
    g[0::2] = -2 * (1 - a) - 400 * a * (b - a * a)
    g[1::2] = 200 * (b - a * a)
    return float(np.sum((1 - a) ** 2 + 100 * (b - a * a) ** 2))


def callee_versions(kernel) -> list:
    """The versions of ``kernel`` that its callers made Numba compile in this process;
    skips the test when there are none: a caller loaded from Numba's cache does not
    compile (nor list) the versions of the kernels it calls, a first (cold) run does."""
    import pytest

    if not kernel.signatures:
        pytest.skip(f"{kernel.__name__}'s callers came from Numba's cache (a cold run checks)")
    return list(kernel.signatures)


def no_literal_versions(kernel) -> bool:
    """Whether no version of ``kernel`` compiled here takes a literal argument (``0``,
    ``False``: Numba compiles those apart from the int64 / bool ones)."""
    return not any("Literal" in str(sig) for sig in callee_versions(kernel))
