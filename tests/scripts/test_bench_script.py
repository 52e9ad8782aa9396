"""scripts/bench.py: the crfsuite bridge renders crfkit's observation strings exactly."""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

import pytest

from crfkit.features.explain import apply_pattern
from crfkit.features.patterns import parse_patterns, read_patterns
from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[2]
bench = load_script("bench")
import bench_columns  # noqa: E402  (scripts/ is on sys.path once bench.py is loaded)
import bench_iterations  # noqa: E402
import bench_peers  # noqa: E402

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


@pytest.mark.parametrize("text", ["B:%x[0,0]", "*", "b:%X[0,0]"])
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


TRANSFORM_PATTERNS = """\
u:a=%X[-2,0]/%X[1,0]
u:b=%t[0,0,"^\\u"]/%t[-1,0,"\\d"]/%T[2,0,"a"]
u:c=%m[0,0,"..$"]/%M[1,0,"^."]/%m[@1,0,"\\u"]
u:d=%x[0,1]/%X[@-1,0]
"""
TOKENS = ["The", "the", "A1", "b-c", "É", "ab", ".", "a"]


@pytest.mark.parametrize("seed", range(10))
def test_bridge_renders_transforms_as_apply_pattern(seed):
    """%X, %t/%T and %m/%M, relative and absolute, in and out of the sequence."""
    rng = random.Random(seed)
    patterns = parse_patterns(TRANSFORM_PATTERNS)
    features = bench.compile_bridge(patterns)
    for _ in range(3):  # the memo of computed values is shared across sequences
        rows = [[rng.choice(TOKENS), rng.choice(["X", "y"]), "L"]
                for _ in range(rng.randint(1, 6))]
        assert features(rows) == expected(patterns, rows)


def test_bridge_on_pos_rich_patterns():
    patterns = read_patterns(ROOT / "patterns" / "pos-rich.pat")
    rows = [["The", "at"], ["Fulton-2", "np"], ["county's", "nn$"], ["1964", "cd"],
            ["''", "''"]]
    assert bench.compile_bridge(patterns)(rows) == expected(patterns, rows)


# ---------------------------------------------------------------------------
# CRF++ gets %X, %t and %m values as derived columns


def crfpp_expand(template_line: str, rows: list[list[str]], i: int) -> str:
    """What CRF++ makes of a template line at token i (its %x and _B padding)."""
    def value(match):
        row, column = int(match.group(1)), int(match.group(2))
        p = i + row
        if 0 <= p < len(rows):
            return rows[p][column]
        return f"_B{p if p < 0 else p - len(rows) + 1:+d}"
    return re.sub(r"%x\[(-?\d+),(\d+)\]", value, template_line)


@pytest.mark.parametrize("seed", range(10))
def test_crfpp_derived_columns_give_the_same_observations(tmp_path, seed):
    """CRF++'s observations are crfkit's, one to one, with '=' before each derived value."""
    rng = random.Random(seed)
    patterns = read_patterns(ROOT / "patterns" / "pos-rich.pat")
    template, transforms = bench_peers.crfpp_template(patterns, 1)
    sequences = [[[rng.choice(TOKENS), rng.choice(["at", "nn"])]
                  for _ in range(rng.randint(1, 6))] for _ in range(4)]
    source, dest = tmp_path / "in.txt", tmp_path / "out.txt"
    bench.write_column_file(source, sequences)
    bench_columns.write_derived(transforms, source, dest)
    derived = list(bench.read_column_file(dest))
    lines = template.splitlines()
    unigram = [p for p in patterns if p.has_unigram]
    assert [line[0] for line in lines] == ["U"] * len(unigram) + ["B"]
    pairs = set()
    for rows, wide in zip(sequences, derived, strict=True):
        assert [row[-1] for row in wide] == [row[-1] for row in rows]
        assert len(wide[0]) == 2 + len(transforms)
        for i in range(len(rows)):
            ours = [apply_pattern(p, rows, i) for p in unigram]
            theirs = [crfpp_expand(line, wide, i) for line in lines[:len(unigram)]]
            pairs.update(zip(ours, theirs, strict=True))
    assert len({a for a, _ in pairs}) == len({b for _, b in pairs}) == len(pairs)


def test_crfpp_derived_value_example():
    patterns = parse_patterns('u:s=%M[0,0,"..$"]\nu:w=%X[-1,0]/%x[0,0]\nu:c=%t[0,0,"^\\u"]')
    template, transforms = bench_peers.crfpp_template(patterns, 1)
    assert template == "U:s=%x[0,1]\nU:w=%x[-1,2]/%x[0,0]\nU:c=%x[0,3]\n"
    assert transforms == [("M", 0, "..$"), ("X", 0, None), ("t", 0, "^\\u")]


@pytest.mark.parametrize("text", ['u:%t[-1,0,"a"]', 'u:%m[1,0,"a"]', "u:%x[@1,0]"])
def test_crfpp_refuses_derived_values_of_neighbours(text):
    with pytest.raises(bench_peers.PeerUnavailable, match="derived column"):
        bench_peers.crfpp_template(parse_patterns(text), 1)


# ---------------------------------------------------------------------------
# Per-iteration seconds from each tool's own log (recorded snippets)

CRFKIT_STDERR = """\
* 2000 sequences, 41212 tokens, 88 labels, 81533 observations, 245121 features (3.10s to encode)
  [   1] obj=100.0          tok-err= 10.00% seq-err= 50.00% time=   0.50s
  [   2] obj=50.5           tok-err=  5.00% seq-err= 40.00% time=   0.80s
  [   3] obj=40.5           tok-err=  5.00% seq-err= 40.00% time=   1.20s
  [   4] obj=30.5           tok-err=  5.00% seq-err= 40.00% time=   1.70s
  [   5] obj=20.5           tok-err=  5.00% seq-err= 40.00% time=   3.70s
* stopped after 5 iterations: maximum number of iterations (6.0s)
"""
WAPITI_OUTPUT = """\
* Train the model with l-bfgs
  [   1] obj=6692.48    act=639276   err=77.49%/100.00% time=1.52s/1.52s
  [   2] obj=5977.80    act=639276   err=60.40%/100.00% time=0.70s/2.22s
  [   3] obj=5351.44    act=639276   err=63.73%/98.78% time=0.67s/2.89s
* Save the model
"""


def test_crfkit_iteration_seconds_and_sizes():
    parsed = bench.parse_crfkit_train(CRFKIT_STDERR)
    assert parsed["iteration_s"] == pytest.approx([0.5, 0.3, 0.4, 0.5, 2.0])
    assert parsed["s_per_iteration_2_4"] == pytest.approx(0.4)
    assert (parsed["labels"], parsed["observations"]) == (88, 81533)


def test_wapiti_iteration_seconds():
    times = bench_iterations.wapiti_iteration_s(WAPITI_OUTPUT)
    assert times == [1.52, 0.70, 0.67]
    assert bench_iterations.steady_s_per_iteration(times) == pytest.approx(0.685)


def test_arrival_times_give_durations():
    """CRF++ (no start known: the first is unknown) and crfsuite (from feature generation)."""
    assert bench_iterations.durations([10.0, 12.5, 14.0]) == [None, 2.5, 1.5]
    assert bench_iterations.durations([3.0, 4.0], 1.0) == [2.0, 1.0]
    assert bench_iterations.steady_s_per_iteration([None, 2.5, 1.5]) == 2.0
    assert bench_iterations.steady_s_per_iteration([7.0]) is None


def test_extrapolation_adds_the_missing_iterations_at_the_steady_rate():
    result = {"iterations": 4, "train_wall_s": 30.0}
    bench_iterations.add_steady(result, [None, 5.0, 6.0, 7.0])
    bench_iterations.extrapolate(result, 104)
    assert result["converged_train_s"] == pytest.approx(30.0 + 100 * 6.0)
    assert (result["extrapolated_from"], result["extrapolated_to"]) == (4, 104)


def test_flops_and_peak_fraction():
    # 2 FLOPs x 3 passes x 1000 tokens x 10^2 labels + 2 x 50 observations x 10 labels
    flops = bench_iterations.flops_per_iteration(1000, 10, 50)
    assert flops == 600_000 + 1_000
    result = {"s_per_iteration_2_4": 0.001}
    bench_iterations.add_peak_fraction(result, flops, peak_gflops=2.0)
    assert result["gflops_per_s"] == pytest.approx(0.601)
    assert result["peak_percent"] == pytest.approx(30.05)


def test_iteration_table_lists_every_tool_with_a_log():
    sides = {"crfkit": bench.parse_crfkit_train(CRFKIT_STDERR), "crfsuite": None,
             "wapiti": {}}
    bench_iterations.add_steady(sides["wapiti"], [1.52, 0.70, 0.67])
    table = bench_iterations.format_iterations(sides).splitlines()
    assert table[1].split() == ["crfkit", "0.500", "0.300", "0.400", "0.500", "0.400"]
    assert table[2].split() == ["wapiti", "1.520", "0.700", "0.670", "-", "0.685"]
    assert len(table) == 3


def test_plot_is_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "plot.png"
    sides = {"crfkit": {"s_per_iteration_2_4": 0.2}, "wapiti": {"s_per_iteration_2_4": 9.0},
             "crf++": None}
    assert bench_iterations.write_plot(path, sides, "title")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]


# ---------------------------------------------------------------------------
# Options and scores


def test_brown_corpus_defaults():
    if bench.default_data_dir("brown") is None:
        pytest.skip("no shared/data/brown beside the repository")
    args = bench.parse_args(["--corpus", "brown", "--extrapolate", "crf++=5",
                             "--extrapolate", "wapiti=3", "--maxiter", "4"])
    assert args.train.parent.name == "brown" and args.test.name == "test.txt"
    assert args.pattern.name == "pos.pat" and args.metric == "accuracy"
    assert args.extrapolate == {"crf++": 5, "wapiti": 3}
    assert [bench.tool_maxiter(args, name) for name in ("crf++", "wapiti", "crfkit")] == [4, 3, 4]


@pytest.mark.parametrize("value", ["crfkit=5", "wapiti", "wapiti=1", "crf++=x"])
def test_extrapolate_option_refuses_bad_values(value, capsys, tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("a b\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        bench.parse_args(["--train", str(data), "--test", str(data), "--extrapolate", value])
    assert exit_info.value.code == 2
    assert "TOOL=N" in capsys.readouterr().err


def test_token_accuracy(tmp_path):
    path = tmp_path / "out.txt"
    bench.write_column_file(path, [[["a", "x", "x"], ["b", "y", "z"]],
                                   [["c", "z", "z"], ["d", "x", "x"]]])
    assert bench.scores_of(path, "accuracy") == {"test_accuracy": 75.0}


def test_iteration_work_extrapolates_only_tools_stopped_at_their_cap():
    def run(maxiter):
        args = argparse.Namespace(extrapolate={"wapiti": 3, "crf++": 5}, maxiter=maxiter,
                                  peak_gflops=10.0)
        sides = {"crfkit": {"iterations": 50, "train_wall_s": 20.0, "observations": 7},
                 "wapiti": {"iterations": 3, "train_wall_s": 9.0},  # stopped at its cap
                 "crf++": {"iterations": 4, "train_wall_s": 8.0},  # converged before it
                 "crfsuite": None}
        bench_iterations.add_steady(sides["wapiti"], [3.0, 2.0, 2.0])
        files = {"train_tokens": 100, "labels": 4}
        return bench.iteration_work(args, files, sides), sides
    work, sides = run(0)
    assert work["flops_per_iteration"] == 2 * 3 * 100 * 16 + 2 * 7 * 4
    assert sides["wapiti"]["converged_train_s"] == pytest.approx(9.0 + 47 * 2.0)
    assert sides["wapiti"]["extrapolated_from"] == 3
    assert sides["crf++"]["converged_train_s"] == 8.0 and "extrapolated_from" not in sides["crf++"]
    assert sides["crfkit"]["converged_train_s"] == 20.0
    _, capped = run(10)
    assert not any("converged_train_s" in side for side in capped.values() if side)
    assert capped["wapiti"]["gflops_per_s"] == pytest.approx(work["flops_per_iteration"] / 2e9)
