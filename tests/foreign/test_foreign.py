"""Models of CRF++, Wapiti and CRFsuite read as crfkit models (crfkit.foreign).

Two kinds of evidence: small foreign model files written here, whose best
paths are checked against a brute-force scorer that works on the tools' own
feature strings (not on crfkit's tuples); and the real files the real tools
wrote in ../shared/data/peer-models, whose labelling of CoNLL-2000 test.txt,
n-best paths, probabilities and scores the converted models must reproduce.
"""

from __future__ import annotations

import gzip
import itertools
import struct
from pathlib import Path

import numpy as np
import pytest

from crfkit.errors import CrfkitError, ModelFormatError, UsageError
from crfkit.features.explain import apply_pattern
from crfkit.features.patterns import parse_pattern_line, parse_patterns
from crfkit.foreign import detect, read_model
from crfkit.foreign.build import splits
from crfkit.io.reader import read_sequences
from crfkit.labelling.label import label, label_sequences
from crfkit.model.model import Model
from tests.helpers import SHARED, missing_shared, one_error_line, run

PEERS = SHARED / "data" / "peer-models"
TEST = SHARED / "data" / "conll2000" / "test.txt"
needs_peers = pytest.mark.skipif(bool(missing_shared(PEERS / "SOURCE.md", TEST)),
                                 reason=missing_shared(PEERS / "SOURCE.md", TEST))


# --- small hand-made models against a brute-force scorer of feature strings -----------------
def best_path_by_strings(rows, labels, unigram, bigram, patterns, pad=None):
    """Best label path by enumeration, scoring the tool's feature strings directly."""
    n, L = len(rows), len(labels)

    def strings(kind, i):
        out = []
        for p in patterns:
            if p.kind == kind or p.kind == "*":
                text = apply_pattern(p, rows, i)
                out.append(pad(text) if pad else text)
        return out

    best, best_path = -np.inf, None
    for path in itertools.product(range(L), repeat=n):
        score = 0.0
        for i, y in enumerate(path):
            score += sum(unigram.get(s, np.zeros(L))[y] for s in strings("u", i))
            if i:
                score += sum(bigram.get(s, np.zeros((L, L)))[path[i - 1], y]
                             for s in strings("b", i))
        if score > best:
            best, best_path = score, path
    return [labels[y] for y in best_path]


def crfpp_text(labels, templates, blocks, cost=1.0):
    """A CRF++ text model (the crf_learn -t layout) from string -> weight block."""
    lines = ["version: 100", f"cost-factor: {cost}", "", "xsize: 2", ""]
    lines += labels + [""] + templates + [""]
    weights, offset = [], 0
    for text in sorted(blocks):
        lines.append(f"{offset} {text}")
        weights += [f"{w:.16f}" for w in np.ravel(blocks[text])]
        offset += np.size(blocks[text])
    lines[2] = f"maxid: {offset}"
    return ("\n".join(lines + [""] + weights) + "\n").encode()


def small_corpus(seed, padding_like="_B-1"):
    """Random two-column sequences; words hold the separator and a padding look-alike."""
    rng = np.random.default_rng(seed)
    words = ["a", "a/b", "b", padding_like, "c/"]
    return [[[str(rng.choice(words)), str(rng.choice(["N", "V"]))]
             for _ in range(int(rng.integers(1, 5)))] for _ in range(12)]


def test_splits_lists_every_reading_of_an_ambiguous_string():
    pattern = parse_pattern_line("U05:%x[-1,0]/%x[0,0]")
    assert splits(pattern, "U05:a/b/c") == [("a", "b/c"), ("a/b", "c")]
    assert splits(pattern, "U05:a/b") == [("a", "b")]
    assert splits(pattern, "U06:a/b") == []
    assert splits(parse_pattern_line("B"), "B") == [()]


def test_crfpp_text_model_gives_the_brute_force_best_path(tmp_path):
    rng = np.random.default_rng(3)
    labels = ["X", "Y", "Z"]
    templates = ["U00:%x[0,0]", "U01:%x[-1,0]/%x[0,0]", "U02:%x[1,1]", "B01:%x[0,1]", "B"]
    patterns = parse_patterns("\n".join(templates))
    corpus = small_corpus(1)
    unigram, bigram = {}, {}
    for rows in corpus:
        for i in range(len(rows)):
            for p in patterns:
                s = apply_pattern(p, rows, i)
                table, shape = (unigram, 3) if p.kind == "u" else (bigram, (3, 3))
                table.setdefault(s, rng.normal(size=shape))
    cost = 0.5
    blocks = {**unigram, **bigram}
    path = tmp_path / "m.txt"
    path.write_bytes(crfpp_text(labels, templates, blocks, cost))
    assert detect(path.read_bytes()) == "crfpp"
    model = read_model(path)
    got = label_sequences(model, [_seq(rows) for rows in corpus])
    scaled_u = {k: cost * v for k, v in unigram.items()}
    scaled_b = {k: cost * v for k, v in bigram.items()}
    for rows, labels_got in zip(corpus, got, strict=True):
        assert labels_got == best_path_by_strings(rows, labels, scaled_u, scaled_b, patterns)


def wapiti_text(kind, patterns, labels, observations, weights):
    def ns(s):
        return f"{len(s.encode())}:{s},\n"
    out = f"#mdl#{kind}#{len(weights)}\n#rdr#{len(patterns)}/1/0\n"
    out += "".join(ns(p) for p in patterns)
    out += f"#qrk#{len(labels)}\n" + "".join(ns(s) for s in labels)
    out += f"#qrk#{len(observations)}\n" + "".join(ns(s) for s in observations)
    out += "".join(f"{i}={float(v).hex()}\n" for i, v in weights)
    return out.encode()


def test_wapiti_model_with_padding_and_both_kinds_gives_the_brute_force_best_path(tmp_path):
    rng = np.random.default_rng(5)
    labels = ["X", "Y"]
    pats = ["u:w=%x[-1,0]/%x[0,0]", "*:n=%x[6,0]", "b:t=%X[0,1]", "u:c=%T[0,0,\"/\"]", "b"]
    patterns = parse_patterns("\n".join(pats).replace("%T", "%t"))

    def as_wapiti(text):  # crfkit's padding spelling -> Wapiti's
        for d in range(1, 8):
            for sign in "-+":
                text = text.replace(f"_B{sign}{d}", f"_x{sign}{d if d <= 4 else '#'}")
        return text
    # (a token spelt "_B-1" would read crfkit's padding: the one case it cannot tell apart)
    corpus = small_corpus(2, padding_like="_x-1")
    observations = []
    for rows in corpus:
        for i in range(len(rows)):
            for p in patterns:
                s = as_wapiti(apply_pattern(p, rows, i))
                if s not in observations:
                    observations.append(s)
    observations.append("u:w=_x-1/never")
    L, weights, offset = len(labels), [], 0
    unigram, bigram = {}, {}
    for s in observations:
        if s[0] in "u*":
            unigram[s] = rng.normal(size=L)
            weights += [(offset + y, unigram[s][y]) for y in range(L)]
            offset += L
        if s[0] in "b*":
            bigram[s] = rng.normal(size=(L, L))
            weights += [(offset + k, v) for k, v in enumerate(bigram[s].ravel())]
            offset += L * L
    path = tmp_path / "wapiti.model"
    path.write_bytes(wapiti_text(2, pats, labels, observations, weights))
    model = read_model(path)
    assert model.model_type == "crf"
    got = label_sequences(model, [_seq(rows) for rows in corpus])
    for rows, labels_got in zip(corpus, got, strict=True):
        want = best_path_by_strings(rows, labels, unigram, bigram, patterns, pad=as_wapiti)
        assert labels_got == want


def test_wapiti_regexes_convert_with_wapitis_own_matching(tmp_path):
    # Observation values derived by hand from Wapiti's matcher (src/pattern.c): its
    # lazy star gives "" for \d* on "12", %t reads the padding token "_x-1" (a digit),
    # %M matches case-sensitively and lower-cases ("\u\a*" on "Hello" is "h").
    pats = ['u:d=%m[0,0,"\\d*"]', 'u:p=%t[-1,0,"\\d"]', 'u:M=%M[0,0,"\\u\\a*"]', "b"]
    observations = ["u:p=true", "u:M=h", "u:d=", "b"]
    blocks = [[0, 5, 0], [0, 0, 10], [0, 0, 1], [0] * 9]
    weights, offset = [], 0
    for block in blocks:
        weights += [(offset + k, v) for k, v in enumerate(block) if v]
        offset += len(block)
    path = tmp_path / "m"
    path.write_bytes(wapiti_text(2, pats, ["A", "B", "C"], observations, weights))
    model = read_model(path)
    sentences = [[["abc", "N"], ["def", "N"]], [["Hello", "N"], ["12", "N"]]]
    want = [["B", "C"], ["C", "C"]]
    assert label_sequences(model, [_seq(rows) for rows in sentences]) == want
    reloaded = Model.from_bytes(model.to_bytes())  # the mode is recorded in the model
    assert label_sequences(reloaded, [_seq(rows) for rows in sentences]) == want
    assert {p.regex_mode for p in reloaded.patterns if p.commands} == {"wapiti"}


def _seq(rows):
    from crfkit.io.reader import Sequence

    return Sequence(rows=rows, lines=list(range(1, len(rows) + 1)))


# --- the real files the real tools wrote ------------------------------------------------
@pytest.fixture(scope="module")
def peer_models():
    if missing_shared(PEERS / "SOURCE.md"):
        pytest.skip(missing_shared(PEERS / "SOURCE.md"))
    return {
        "crfpp": read_model(PEERS / "crfpp.model"),
        "crfpp-text": read_model(PEERS / "crfpp.model.txt.gz"),
        "wapiti": read_model(PEERS / "wapiti.model"),
        "crfsuite": read_model(PEERS / "crfsuite.model", patterns=str(PEERS / "template")),
    }


@pytest.fixture(scope="module")
def conll_test():
    return list(read_sequences(TEST))


def last_column(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [line.split()[-1] for line in handle if line.strip()]


@needs_peers
@pytest.mark.parametrize("name, output", [("crfpp", "crfpp.test.out"),
                                          ("crfpp-text", "crfpp.test.out"),
                                          ("wapiti", "wapiti.test.out"),
                                          ("crfsuite", "crfsuite.test.out")])
def test_converted_models_label_test_txt_as_the_tool_did(peer_models, conll_test, name, output):
    predicted = [y for labels in label_sequences(peer_models[name], conll_test) for y in labels]
    expected = last_column(PEERS / output)
    assert len(predicted) == len(expected) == 47377
    assert sum(a != b for a, b in zip(predicted, expected, strict=True)) == 0


def read_blocks(path):
    """(header numbers, token lines split on whitespace) of each '# ...' block."""
    opener = gzip.open if str(path).endswith(".gz") else open
    blocks = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("# "):
                blocks.append(([float(x) for x in line[2:].split()], []))
            elif line.strip():
                blocks[-1][1].append(line.split())
    return blocks


@needs_peers
def test_crfpp_two_best_and_marginals_agree_with_crf_test_v2(peer_models):
    model = peer_models["crfpp"]
    seqs = list(read_sequences(PEERS / "test300.txt"))
    results = label(model, seqs, nbest=2, marginals=True)
    blocks = read_blocks(PEERS / "crfpp.test300.v2n2.out.gz")
    assert len(blocks) == 2 * len(seqs)
    index = {name: y for y, name in enumerate(model.labels)}
    for s, result in enumerate(results):
        for rank in range(2):
            (number, prob), tokens = blocks[2 * s + rank]
            assert int(number) == rank
            assert result.paths[rank] == [t[3].split("/")[0] for t in tokens]
            assert abs(np.exp(result.log_probs[rank]) - prob) < 5.1e-5
            for t, fields in enumerate(tokens):
                for item in fields[4:]:
                    name, p = item.rsplit("/", 1)
                    assert abs(result.marginals[t, index[name]] - float(p)) < 5.1e-5


def path_score(model, rows, path):
    """Raw score of a label path under a converted model (unigrams + transitions)."""
    from crfkit.labelling.label import encode

    data = encode(model, [_seq(rows)])
    s, W, L = model.space, model.weights, len(model.labels)
    trans = W[s.trans_offset:].reshape(L, L)
    total, per_token = 0.0, []
    for t, y in enumerate(path):
        score = 0.0
        for o in data.tok_obs[data.tok_ptr[t]:data.tok_ptr[t + 1]]:
            feats = slice(s.u_ptr[o], s.u_ptr[o + 1])
            score += W[feats][s.u_lab[feats] == y].sum()
        if t:
            score += trans[path[t - 1], y]
        per_token.append(score)
        total += score
    return total, per_token


@needs_peers
def test_wapiti_two_best_and_scores_agree_with_wapiti_label_s_n2(peer_models):
    model = peer_models["wapiti"]
    seqs = list(read_sequences(PEERS / "test300.txt"))
    results = label(model, seqs, nbest=2)
    blocks = read_blocks(PEERS / "wapiti.test300.n2s.out")
    assert len(blocks) == 2 * len(seqs)
    index = {name: y for y, name in enumerate(model.labels)}
    for s, result in enumerate(results):
        scores = []
        for rank in range(2):
            (number, score), tokens = blocks[2 * s + rank]
            assert int(number) == rank
            labels = [t[-2] for t in tokens]
            assert result.paths[rank] == labels
            total, per_token = path_score(model, seqs[s].rows, [index[y] for y in labels])
            assert abs(total - score) < 5.1e-5 * max(1.0, abs(score) / 100)
            for t, fields in enumerate(tokens):
                assert abs(per_token[t] - float(fields[-1].rsplit("/", 1)[1])) < 5.1e-5
            scores.append(score)
        # crfkit's log-probabilities differ by what Wapiti's raw scores differ by
        assert abs((result.log_probs[1] - result.log_probs[0]) - (scores[1] - scores[0])) < 1e-4


# --- command line and damaged files --------------------------------------------------------
@needs_peers
@pytest.mark.slow
def test_convert_then_label_from_the_command_line(tmp_path):
    out = tmp_path / "wapiti.crfkit"
    result = run("convert", PEERS / "wapiti.model", out)
    assert result.exit_code == 0, result.stderr
    assert "converted Wapiti model" in result.stderr
    model = Model.load(out)
    assert model.info["converted_from"]["format"] == "Wapiti"
    sample = tmp_path / "in.txt"
    sample.write_text("\n\n".join(TEST.read_text().split("\n\n", 40)[:40]) + "\n")
    direct = run("label", "-m", PEERS / "wapiti.model", sample)
    saved = run("label", "-m", out, sample)
    assert direct.exit_code == saved.exit_code == 0
    assert direct.stdout == saved.stdout and direct.stdout.count("\n") > 100


def _damaged(tmp_path: Path) -> list[tuple[Path, str]]:
    cases = []
    data = (PEERS / "crfpp.model").read_bytes()
    for tag, blob, needle in (
            ("trunc-crfpp", data[:len(data) // 2], "truncated CRF++"),
            ("version-crfpp", struct.pack("<I", 250) + data[4:], "version 250"),
            ("trunc-wapiti", (PEERS / "wapiti.model").read_bytes()[:300_000], "Wapiti"),
            ("trunc-crfsuite", (PEERS / "crfsuite.model").read_bytes()[:-100], "CRFsuite"),
            ("text-extra", gzip.decompress((PEERS / "crfpp.model.txt.gz").read_bytes())
             + b"1.0\n", "weights")):
        path = tmp_path / tag
        path.write_bytes(blob)
        cases.append((path, needle))
    return cases


@needs_peers
def test_damaged_files_are_one_error_line_and_nothing_is_written(tmp_path):
    for path, needle in _damaged(tmp_path):
        out = tmp_path / "out.model"
        result = run("convert", path, out)
        one_error_line(result, str(path), needle)
        assert not out.exists()


@needs_peers
def test_crfsuite_needs_patterns_that_generate_its_attributes(tmp_path):
    with pytest.raises(ModelFormatError, match="--patterns"):
        read_model(PEERS / "crfsuite.model")
    short = tmp_path / "short.pat"
    short.write_text("U00:%x[-2,0]\nB\n")
    with pytest.raises(ModelFormatError, match="cannot be generated"):
        read_model(PEERS / "crfsuite.model", patterns=str(short))
    with pytest.raises(UsageError, match="CRFsuite models only"):
        read_model(PEERS / "wapiti.model", patterns=str(short))
    with pytest.raises(ModelFormatError, match="looks like a CRF\\+\\+"):
        read_model(PEERS / "crfpp.model", fmt="wapiti")
    with pytest.raises(CrfkitError, match="not a crfkit model file, nor a CRF"):
        read_model(PEERS / "template")


def best_path_local(rows, labels, unigram, bigram, patterns, memm):
    """Wapiti's MEMM (or maxent) best path by enumeration: locally normalised scores."""
    L = len(labels)

    def psi(i, prev):
        score = np.zeros(L)
        for p in patterns:
            text = apply_pattern(p, rows, i)
            if p.kind in "u*":
                score += unigram.get(text, np.zeros(L))
            if memm and i and p.kind in "b*":
                score += bigram.get(text, np.zeros((L, L)))[prev]
        return score - np.log(np.exp(score - score.max()).sum()) - score.max()

    best, best_path = -np.inf, None
    for path in itertools.product(range(L), repeat=len(rows)):
        total = sum(psi(i, path[i - 1] if i else 0)[y] for i, y in enumerate(path))
        if total > best + 1e-12:
            best, best_path = total, path
    return [labels[y] for y in best_path]


@pytest.mark.parametrize("kind, name", [(1, "memm"), (0, "maxent")])
def test_wapiti_memm_and_maxent_models_keep_their_type(tmp_path, kind, name):
    rng = np.random.default_rng(7 + kind)
    labels = ["X", "Y", "Z"]
    pats = ["u:w=%x[0,0]", "u:p=%x[-1,1]", "b"]
    patterns = parse_patterns("\n".join(pats))
    corpus = small_corpus(4, padding_like="d")
    observations = sorted({apply_pattern(p, rows, i).replace("_B-1", "_x-1")
                           for rows in corpus for i in range(len(rows)) for p in patterns})
    unigram, bigram, weights, offset = {}, {}, [], 0
    for s in observations:
        size = 3 if s[0] == "u" else 9
        block = rng.normal(size=size) if s[0] == "u" or kind == 1 else np.zeros(size)
        weights += [(offset + k, v) for k, v in enumerate(block) if v]
        (unigram if s[0] == "u" else bigram)[s.replace("_x-1", "_B-1")] = \
            block.reshape(-1, 3) if size == 9 else block
        offset += size
    path = tmp_path / "local.model"
    path.write_bytes(wapiti_text(kind, pats, labels, observations, weights))
    model = read_model(path)
    assert model.model_type == name
    got = label_sequences(model, [_seq(rows) for rows in corpus])
    for rows, labels_got in zip(corpus, got, strict=True):
        assert labels_got == best_path_local(rows, labels, unigram, bigram, patterns,
                                             memm=kind == 1)
