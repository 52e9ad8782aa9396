"""scripts/bench.py: the crfsuite bridge renders crfkit's observation strings exactly."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

from crfkit.features.explain import apply_pattern
from crfkit.features.patterns import parse_patterns, read_patterns

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("crfkit_bench_script", ROOT / "scripts" / "bench.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("crfkit_bench_script", bench)
_spec.loader.exec_module(bench)

PATTERNS = """\
U00:%x[-3,0]
U01:%x[-1,0]/%x[0,0]
u:%x[ 2 , 1 ]!
U02:%x[@1,0]|%x[@-1,1]|%x[@4,0]|%x[@-5,1]
U03:%x[0,1]/%x[1,1]/%x[3,0]
U
B
"""


def expected(patterns, rows):
    unigram = [p for p in patterns if p.kind == "u"]
    return [tuple(apply_pattern(p, rows, i) for p in unigram) for i in range(len(rows))]


@pytest.mark.parametrize("seed", range(20))
def test_bridge_matches_apply_pattern(seed):
    rng = random.Random(seed)
    patterns = parse_patterns(PATTERNS)
    features = bench.compile_bridge(patterns)
    rows = [[rng.choice(["a", "b%s", "c:d", "é"]), rng.choice(["X", "Y"]), "L"]
            for _ in range(rng.randint(1, 7))]
    assert features(rows) == expected(patterns, rows)


def test_bridge_on_chunking_patterns():
    patterns = read_patterns(ROOT / "patterns" / "chunking.pat")
    rows = [["Confidence", "NN", "B-NP"], ["in", "IN", "B-PP"], ["the", "DT", "B-NP"]]
    assert bench.compile_bridge(patterns)(rows) == expected(patterns, rows)


@pytest.mark.parametrize("text", ['U:%X[0,0]', 'U:%t[0,0,"a"]', "B:%x[0,0]", "*"])
def test_bridge_refuses_what_it_cannot_reproduce(text):
    with pytest.raises(bench.UnsupportedPattern):
        bench.compile_bridge(parse_patterns(text))


def test_parse_crfkit_train_stderr():
    stderr = ("* 300 sequences, 7189 tokens, 18 labels, 20000 observations, 39732 features "
              "(1.38s to encode)\n"
              "  [   1] obj=100.0          tok-err= 10.00% seq-err= 50.00% time=   0.10s\n"
              "  [   2] obj=50.5           tok-err=  5.00% seq-err= 40.00% time=   0.30s\n"
              "* stopped after 2 iterations: maximum number of iterations (2.0s)\n")
    parsed = bench.parse_crfkit_train(stderr)
    assert parsed["iterations"] == 2
    assert parsed["features"] == 39732
    assert parsed["encode_s"] == 1.38
    assert parsed["optimise_wall_s"] == 0.30
    assert parsed["final_objective"] == 50.5
    assert "nonzero_weights" not in parsed


def test_parse_crfkit_train_stderr_of_an_l1_run():
    stderr = ("  [   7] obj=11.5           tok-err=  1.00% seq-err= 20.00% time=   0.70s\n"
              "* stopped after 7 iterations: converged (relative improvement < 1e-05 over 10 "
              "iterations) (3.1s), 16,535 of 456,807 weights non-zero\n")
    parsed = bench.parse_crfkit_train(stderr)
    assert parsed["iterations"] == 7
    assert parsed["stop_reason"].startswith("converged (relative improvement < 1e-05")
    assert parsed["in_process_s"] == 3.1
    assert parsed["nonzero_weights"] == 16535


def test_bars_and_table_with_one_side_missing():
    crfkit = {"train_wall_s": 1.0, "warm_label_start_s": 0.5, "test_f1": 90.0}
    verdicts = {bar: verdict for verdict, bar, _ in bench.check_bars(crfkit, None)}
    assert verdicts["crfkit warm label start < 1.0 s"] == "PASS"
    assert verdicts["train wall ratio <= 0.7"].strip() == "n/a"
    assert "train wall (s)" in bench.format_table(crfkit, None)
