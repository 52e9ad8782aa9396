"""Reliability: damaged and too-new model files, pickling and threads, determinism,
encodings, awkward label and token strings, and ``--sep tab``.

Every refusal goes through the CLI and must be exactly one error line naming the file.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import pickle
import pickletools
import re
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from crfkit.cli import cli
from crfkit.errors import InputError
from crfkit.io import fileformat
from crfkit.io.fileformat import FORMAT_VERSION, MAGIC
from crfkit.io.reader import read_sequences
from tests.helpers import one_error_line, run

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "data/address-train.txt"
TEST = ROOT / "data/address-test.txt"
PATTERNS = ROOT / "patterns/address.pat"


def first_sequences(path: Path, n: int) -> str:
    """The text of the first ``n`` sequences of a column file."""
    blocks = path.read_text(encoding="utf-8").split("\n\n")
    return "\n\n".join(blocks[:n]).strip("\n") + "\n"


@pytest.fixture(scope="module")
def small(tmp_path_factory, address_model_file):
    """A directory for damaged copies, the shared model (conftest) and a file to label."""
    tmp = tmp_path_factory.mktemp("small")
    model = address_model_file
    data = tmp / "input.txt"
    data.write_text("\n".join(" ".join(line.split()[:2]) for line in
                              first_sequences(TEST, 3).splitlines()) + "\n", encoding="utf-8")
    return tmp, model, data


@pytest.fixture(scope="module")
def trained(address_model):
    """A model trained in-process (200 sequences of the sample, 5 iterations; conftest)."""
    return address_model


def regions(data: bytes) -> dict[str, tuple[int, int]]:
    """Byte ranges of a model file: prefix, JSON header, each array, checksum."""
    (header_length,) = struct.unpack_from("<Q", data, 12)
    header = json.loads(data[20:20 + header_length])
    payload = 20 + header_length + (-(20 + header_length) % 8)
    out = {"prefix": (0, 20), "header": (20, 20 + header_length), "crc": (len(data) - 4,
                                                                           len(data))}
    for entry in header["arrays"]:
        start = payload + entry["offset"]
        out[entry["name"]] = (start, start + entry["nbytes"])
    return out


def damage_offsets(data: bytes) -> list[int]:
    """20 offsets spread over the prefix, header, vocabulary, weights and checksum."""
    r = regions(data)
    (h0, h1), (w0, w1) = r["header"], r["weights"]
    (k0, k1), (t0, t1), v0 = r["obs_keys"], r["table0_blob"], r["obs_values"][0]
    offsets = [0, 5, 8, 12, 19,  # magic, version, header length
               h0, h0 + 1, (h0 + h1) // 2, h1 - 1,  # JSON header
               k0, (k0 + k1) // 2, v0 + 3, t0, (t0 + t1) // 2,  # vocabulary
               w0, (w0 + w1) // 2, w1 - 1,  # weights
               r["u_lab"][0], len(data) - 4, len(data) - 1]  # features, checksum
    assert len(set(offsets)) == 20
    return offsets


# --- 1. damaged model files -------------------------------------------------------------------
def test_truncated_models_are_refused_with_one_line(small):
    tmp, model, data = small
    original = model.read_bytes()
    bad = tmp / "truncated.model"
    for cut in damage_offsets(original):
        bad.write_bytes(original[:cut])
        one_error_line(run("label", "-m", bad, data), str(bad))


def test_models_with_a_flipped_byte_are_refused_with_one_line(small):
    tmp, model, data = small
    original = model.read_bytes()
    bad = tmp / "flipped.model"
    for k, offset in enumerate(damage_offsets(original)):
        damaged = bytearray(original)
        damaged[offset] ^= 0x01 if k % 2 else 0x80
        bad.write_bytes(bytes(damaged))
        line = one_error_line(run("label", "-m", bad, data), str(bad))
        assert re.search(r"not a crfkit model|truncated|corrupted|version", line), line


def test_undamaged_copy_still_labels(small):
    """The damage tests above are meaningful: the same file, intact, is accepted."""
    _, model, data = small
    result = run("label", "-m", model, data)
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.split("\n")[0].split()) == 3


# --- 2. a newer format version ----------------------------------------------------------------
@pytest.mark.parametrize("fix_checksum", [False, True])
def test_newer_format_version_names_both_versions(small, fix_checksum):
    tmp, model, data = small
    newer = FORMAT_VERSION + 1
    raw = bytearray(model.read_bytes())
    raw[8:12] = struct.pack("<I", newer)
    if fix_checksum:
        raw[-4:] = struct.pack("<I", zlib.crc32(bytes(raw[:-4])))
    bad = tmp / "newer.model"
    bad.write_bytes(bytes(raw))
    line = one_error_line(run("label", "-m", bad, data), str(bad), "newer")
    assert re.search(rf"\b{newer}\b", line) and re.search(rf"\b{FORMAT_VERSION}\b", line), line


# --- 3. pickling and threads ------------------------------------------------------------------
def pickle_globals(blob: bytes) -> set[tuple[str, str]]:
    """(module, name) of every global a pickle references."""
    found, strings = set(), []
    for opcode, arg, _ in pickletools.genops(blob):
        if opcode.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
            strings.append(arg)
        elif opcode.name == "STACK_GLOBAL":
            found.add((strings[-2], strings[-1]))
        elif opcode.name in ("GLOBAL", "INST"):
            found.add(tuple(arg.split(" ", 1)))
    return found


@pytest.mark.parametrize("protocol", [2, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL])
def test_model_pickles_through_its_own_byte_format(trained, protocol):
    from crfkit.labelling.label import label_sequences

    blob = pickle.dumps(trained, protocol=protocol)
    assert MAGIC in blob
    for internal in (b"numpy", b"ndarray", b"_reconstruct", b"Featurizer", b"FeatureSpace",
                     b"ObservationVocab", b"StringTable",
                     b"crfkit.features", b"crfkit.space"):
        assert internal not in blob, internal
    # Only the reconstructor (Model.from_bytes, reached through getattr) is referenced,
    # and protocol 2's spelling of a bytes object (_codecs.encode).
    allowed = {("crfkit.model.model", "Model"), ("builtins", "getattr"), ("__builtin__", "getattr")}
    if protocol < 3:
        allowed.add(("_codecs", "encode"))
    assert pickle_globals(blob) <= allowed, pickle_globals(blob)
    copy = pickle.loads(blob)
    assert copy.to_bytes() == trained.to_bytes()
    sequences = list(itertools.islice(read_sequences(TEST), 50))
    assert label_sequences(copy, sequences) == label_sequences(trained, sequences)


def test_one_model_labels_from_four_threads_like_serially(trained):
    from crfkit.labelling.label import label_sequences

    sequences = list(itertools.islice(read_sequences(TEST), 240))
    batches = [sequences[i::12] for i in range(12)]
    serial = [label_sequences(trained, batch) for batch in batches]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(3):
            assert list(pool.map(lambda b: label_sequences(trained, b), batches)) == serial


# --- 4. determinism ---------------------------------------------------------------------------
# Fields of the model header that could legitimately differ between two identical
# trainings: none (the trainer records neither wall time nor thread count).
VOLATILE_INFO: set[tuple[str, ...]] = set()


def without_volatile(meta: dict) -> tuple[dict, set[tuple[str, ...]]]:
    """``meta`` without the volatile info fields, and which of them it had."""
    meta = json.loads(json.dumps(meta))
    removed = set()
    for path in VOLATILE_INFO:
        node = meta.get("info", {})
        for key in path[:-1]:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict) and path[-1] in node:
            del node[path[-1]]
            removed.add(path)
    return meta, removed


@pytest.mark.slow
def test_training_is_deterministic_across_thread_counts_and_runs(tmp_path, address_sample):
    import numba

    paths = {}
    try:
        for name, threads in (("t1", "1"), ("t2", "2"), ("t2-again", "2")):
            paths[name] = tmp_path / f"{name}.model"
            result = run("train", "-q", "-p", PATTERNS, "-i", "30", "-t", threads,
                         address_sample["train"], paths[name])
            assert result.exit_code == 0, result.stderr
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    loaded = {name: fileformat.read_file(path) for name, path in paths.items()}
    meta0, arrays0 = loaded["t1"]
    normalised0, _ = without_volatile(meta0)
    for name in ("t2", "t2-again"):
        meta, arrays = loaded[name]
        assert arrays.keys() == arrays0.keys()
        for key in arrays0:  # bit for bit, weights included
            assert arrays[key].dtype == arrays0[key].dtype
            assert arrays[key].tobytes() == arrays0[key].tobytes(), key
        normalised, removed = without_volatile(meta)
        assert normalised == normalised0
        assert fileformat.dumps(normalised, arrays) == fileformat.dumps(normalised0, arrays0)
        assert removed <= VOLATILE_INFO
        assert paths[name].read_bytes() == paths["t1"].read_bytes()  # byte-identical files


# --- 5. encodings -----------------------------------------------------------------------------
PLACES = ["東京", "大阪", "京都", "札幌", "福岡", "名古屋"]
PEOPLE = ["田中", "鈴木", "佐藤", "山田", "ｶﾀｶﾅ"]  # half-width katakana: EUC-JP's SS2 byte


def japanese_corpus(n: int) -> str:
    """NE tagging of short Japanese sentences (tokens Japanese, tags ASCII)."""
    sentences = []
    for i in range(n):
        person, place = PEOPLE[i % len(PEOPLE)], PLACES[(i * 7) % len(PLACES)]
        if i % 3 == 0:
            rows = [(person, "名詞", "B-PER"), ("さん", "接尾辞", "I-PER"), ("は", "助詞", "O"),
                    (place, "名詞", "B-LOC"), ("へ", "助詞", "O"), ("行く", "動詞", "O")]
        elif i % 3 == 1:
            rows = [(place, "名詞", "B-LOC"), ("の", "助詞", "O"), ("天気", "名詞", "O"),
                    ("は", "助詞", "O"), ("晴れ", "名詞", "O")]
        else:
            rows = [(f"{place}　都", "名詞", "B-LOC"), ("に", "助詞", "O"),
                    (person, "名詞", "B-PER"), ("が", "助詞", "O"), ("住む", "動詞", "O")]
        rows.append(("。", "記号", "O"))
        sentences.append("\n".join(" ".join(row) for row in rows))
    return "\n\n".join(sentences) + "\n"


@pytest.fixture(scope="module")
def euc_jp(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("eucjp")
    pat = tmp / "ja.pat"
    pat.write_text('u:w=%x[0,0]\nu:p=%x[0,1]\nu:w-1=%x[-1,0]\nu:k=%t[0,0,"^\\a"]\n*\n',
                   encoding="utf-8")
    train = tmp / "train.euc"
    train.write_bytes(japanese_corpus(30).encode("euc-jp"))
    model = tmp / "ja.model"
    result = run("train", "-q", "-p", pat, "-2", "0.01", "--encoding", "euc-jp", train, model)
    assert result.exit_code == 0, result.stderr
    return tmp, train, model


def test_euc_jp_train_label_eval_round_trip_tokens(euc_jp):
    tmp, train, model = euc_jp
    out = tmp / "labelled.euc"
    result = run("label", "-m", model, "-c", "--encoding", "euc-jp", train, out)
    assert result.exit_code == 0, result.stderr
    gold = [line.split(" ") for line in japanese_corpus(30).split("\n")]
    got = [line.split(" ") for line in out.read_bytes().decode("euc-jp").split("\n")]
    assert [row[:3] for row in got[:len(gold)]] == gold  # tokens and gold label unchanged
    assert all(row[3] == row[2] for row in got if len(row) == 4)  # learnt the corpus
    assert any("　" in row[0] for row in got)  # U+3000 stays inside its token
    # -d " ": conlleval's own single-space split (U+3000 is inside a token, see below)
    result = run("eval", "--encoding", "euc-jp", "-d", " ", "--format", "json", out)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["overall"]["f1"] == 100.0 and set(report["types"]) == {"LOC", "PER"}
    assert report["tokens"] == sum(1 for row in gold if row != [""])


def test_eval_default_split_keeps_ideographic_space_inside_tokens(euc_jp):
    tmp, train, model = euc_jp
    out = tmp / "labelled-default.euc"
    assert run("label", "-m", model, "-c", "--encoding", "euc-jp", train, out).exit_code == 0
    result = run("eval", "--encoding", "euc-jp", out)
    assert result.exit_code == 0, result.stderr


def unlabelled(n: int) -> str:
    return "\n".join(" ".join(line.split(" ")[:2]) if line else ""
                     for line in japanese_corpus(n).split("\n"))


def test_euc_jp_labels_unlabelled_input_into_a_file(euc_jp):
    tmp, train, model = euc_jp
    plain = tmp / "plain.euc"
    plain.write_bytes(unlabelled(4).encode("euc-jp"))
    out = tmp / "plain-out.euc"
    result = run("label", "-m", model, "--encoding", "euc-jp", plain, out)
    assert result.exit_code == 0, result.stderr
    rows = [line.split(" ") for line in out.read_bytes().decode("euc-jp").splitlines()]
    assert [row[:2] for row in rows] == [line.split(" ") if line else [""]
                                         for line in unlabelled(4).split("\n")]


def test_euc_jp_label_to_standard_output_uses_the_encoding(euc_jp):
    tmp, train, model = euc_jp
    plain = tmp / "plain.euc"
    plain.write_bytes(unlabelled(4).encode("euc-jp"))
    result = run("label", "-m", model, "--encoding", "euc-jp", plain)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes.decode("euc-jp").split("\n")[0].startswith(PEOPLE[0] + " ")


def invalid_at_line(text: str, line: int, encoding: str) -> tuple[bytes, int]:
    """``text`` encoded, with a byte that is invalid in ``encoding`` inside line ``line``."""
    lines = text.split("\n")
    before = "\n".join(lines[:line - 1]) + "\n"
    offset = len(before.encode(encoding)) + 2
    return before.encode(encoding) + lines[line - 1].encode(encoding)[:2] + b"\xff" + \
        lines[line - 1].encode(encoding)[2:] + ("\n" + "\n".join(lines[line:])).encode(
            encoding), offset


def test_invalid_euc_jp_bytes_name_file_line_and_offset(euc_jp):
    tmp, _, model = euc_jp
    data, offset = invalid_at_line(japanese_corpus(6), 9, "euc-jp")
    bad = tmp / "bad.euc"
    bad.write_bytes(data)
    for args in (("train", "-q", "-p", tmp / "ja.pat", "--encoding", "euc-jp", bad,
                  tmp / "never.model"),
                 ("label", "-m", model, "--encoding", "euc-jp", bad, tmp / "never.out")):
        one_error_line(run(*args), f"{bad}:9:", f"byte offset {offset}", "euc-jp")
    assert not (tmp / "never.model").exists() and not (tmp / "never.out").exists()
    # crfkit eval names the line (it reads whole files and reports no byte offset)
    labelled = "\n".join(line + " O" if line else "" for line in japanese_corpus(6).split("\n"))
    data, _ = invalid_at_line(labelled, 9, "euc-jp")
    bad.write_bytes(data)
    one_error_line(run("eval", "--encoding", "euc-jp", bad), f"{bad}:9", "euc-jp")


def test_label_whose_model_labels_do_not_fit_the_output_encoding(tmp_path):
    pat = tmp_path / "p.pat"
    pat.write_text("u:%x[0,0]\n")
    train = tmp_path / "train.txt"
    train.write_text("a N B-東京\nb N O\n", encoding="utf-8")
    model = tmp_path / "m.model"
    assert run("train", "-q", "-p", pat, train, model).exit_code == 0
    data = tmp_path / "in.txt"
    data.write_bytes("é N\n".encode("latin-1"))
    result = CliRunner().invoke(cli, ["label", "-m", str(model), "--encoding", "latin-1",
                                      str(data), str(tmp_path / "out.txt")])
    assert not isinstance(result.exception, UnicodeError), result.exception
    one_error_line(result, "latin-1")
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize("encoding,text", [
    ("latin-1", "Ça Pro O\nété Nom B-X\n\nnaïve Adj O\n£5 Sym Ø\n"),
    ("cp1256", "القاهرة اسم B-LOC\nفي حرف O\n\nمصر اسم B-LOC\né NN O\n"),
])
def test_single_byte_encodings_through_the_reader(encoding, text):
    data = text.encode(encoding)
    got = [seq.rows for seq in read_sequences(io.BytesIO(data), encoding=encoding)]
    expected = [[line.split(" ") for line in block.splitlines()]
                for block in text.strip().split("\n\n")]
    assert got == expected
    if data.decode("utf-8", "replace") != text:  # the same bytes are not UTF-8
        with pytest.raises(InputError, match=r"byte offset \d+"):
            list(read_sequences(io.BytesIO(data)))


# --- 6. awkward labels and tokens -------------------------------------------------------------
AWKWARD = [  # (token, label): each token always has its label, so the corpus is learnable
    ("a:b", "B-a:b"), ("x/y/z", "I-x/y"), ("100%", "O%"), ("%x[0,0]", "B-%x[0,0]"),
    ("#tag", "#O"), ("_B-1", "_B-1"), ("_B+2", "_B+2"), ("東京", "B-東京"), ("é", "É"),
    ("naïve", "I-ü:%/#"), ("\\", "B-\\"), ('"q"', 'O"'), ("O", "O"), ("-X-x", "x-X-"),
]


def awkward_corpus() -> str:
    sequences = []
    for k in range(8):
        rows = [AWKWARD[(k * 5 + j * 3) % len(AWKWARD)] for j in range(4 + k % 4)]
        sequences.append("\n".join(f"{tok} {label}" for tok, label in rows))
    return "\n\n".join(sequences) + "\n"


def test_awkward_labels_and_tokens_round_trip(tmp_path):
    pat = tmp_path / "p.pat"
    pat.write_text("U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nB\n", encoding="utf-8")
    corpus = tmp_path / "awkward.txt"
    corpus.write_text(awkward_corpus(), encoding="utf-8")
    model = tmp_path / "awkward.model"
    result = run("train", "-q", "-p", pat, "-2", "0.001", "-i", "60", corpus, model)
    assert result.exit_code == 0, result.stderr
    labels = {label for _, label in AWKWARD}
    from crfkit.model.model import Model

    assert set(Model.load(model).labels) == labels  # through the model file unchanged

    out = tmp_path / "out.txt"
    result = run("label", "-m", model, "-c", corpus, out)
    assert result.exit_code == 0, result.stderr
    rows = [line.split(" ") for line in out.read_text(encoding="utf-8").splitlines() if line]
    expected = [line.split(" ") for line in awkward_corpus().splitlines() if line]
    assert [row[:2] for row in rows] == expected  # tokens and gold labels unchanged
    assert [row[2] for row in rows] == [row[1] for row in expected]  # predictions exact

    result = run("eval", "--format", "json", out)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report["labels"]) == labels and report["accuracy"] == 100.0

    result = run("dump", model)
    assert result.exit_code == 0, result.stderr
    dumped = result.stdout
    section = dumped.split("# labels\n", 1)[1].split("# features", 1)[0]
    assert set(section.splitlines()) == labels
    for token, label in AWKWARD:
        assert f"U00:{token}\t{label}\t" in dumped, (token, label)


# --- 7. --sep tab: tokens with spaces -----------------------------------------------------------
SPACED = [("New York", "NNP", "B-LOC"), ("is", "VBZ", "O"), ("in", "IN", "O"),
          ("the  United States", "NNP", "B-LOC"), ("x y z", "SYM", "O")]


def test_sep_tab_keeps_spaces_inside_tokens_through_train_and_label(tmp_path):
    pat = tmp_path / "p.pat"
    pat.write_text("U00:%x[0,0]\nU01:%x[0,1]\nU02:%x[-1,0]\nB\n", encoding="utf-8")
    corpus = tmp_path / "tab.txt"
    text = "\n\n".join("\n".join("\t".join(row) for row in SPACED[k:] + SPACED[:k])
                       for k in range(len(SPACED))) + "\n"
    corpus.write_text(text, encoding="utf-8")
    model = tmp_path / "tab.model"
    result = run("train", "-q", "-p", pat, "--sep", "tab", "-2", "0.01", corpus, model)
    assert result.exit_code == 0, result.stderr
    unlabelled = tmp_path / "unlabelled.txt"
    unlabelled.write_text("\n".join("\t".join(row[:2]) for row in SPACED) + "\n",
                          encoding="utf-8")
    result = run("label", "-m", model, "--sep", "tab", unlabelled)
    assert result.exit_code == 0, result.stderr
    assert [line.split("\t") for line in result.stdout.splitlines() if line] == \
        [list(row) for row in SPACED]
    # Without --sep tab the same file splits at the spaces: refused, naming the line.
    one_error_line(run("train", "-q", "-p", pat, corpus, tmp_path / "never.model"),
                   f"{corpus}:")


def test_models_share_arrays_bitwise_after_a_save_load_cycle(trained, tmp_path):
    """Saving and loading is lossless: same bytes again, same arrays bit for bit."""
    from crfkit.model.model import Model

    path = tmp_path / "m.model"
    trained.save(path)
    again = Model.load(path)
    assert again.to_bytes() == trained.to_bytes() == path.read_bytes()
    assert np.array_equal(again.weights.view(np.uint64), trained.weights.view(np.uint64))


def test_an_observation_value_past_its_own_table_is_refused(trained, tmp_path):
    """Checksummed but inconsistent: a value that fits the largest string table but not the
    (smaller) table of its own command is refused before any use of the values (they are
    checked on first use: labelling never reads them), and dump says so in one line."""
    from crfkit.errors import ModelFormatError
    from crfkit.model.model import Model

    featurizer = trained.featurizer
    sizes = [len(table) for table in featurizer.tables]
    vocab = featurizer.vocab
    first = np.cumsum(featurizer.n_commands[vocab.pattern]) - featurizer.n_commands[vocab.pattern]
    for obs in range(len(vocab)):  # the first observation whose first table is not the largest
        transforms = featurizer.command_transform[vocab.pattern[obs]]
        if transforms and sizes[transforms[0]] < max(sizes):
            break
    else:
        pytest.fail("the address patterns should read tables of different sizes")
    meta, arrays = fileformat.loads(trained.to_bytes())
    Model.from_bytes(fileformat.dumps(meta, arrays))  # re-serialised unchanged: accepted
    values = arrays["obs_values"].copy()
    values[first[obs]] = sizes[transforms[0]]
    arrays["obs_values"] = values
    damaged = Model.from_bytes(fileformat.dumps(meta, arrays))
    with pytest.raises(ModelFormatError, match="value index out of range"):
        damaged.featurizer.observation_strings()
    with pytest.raises(ModelFormatError, match="value index out of range"):
        Model.from_bytes(fileformat.dumps(meta, arrays)).featurizer.vocab.values  # noqa: B018
    path = tmp_path / "damaged.model"
    path.write_bytes(fileformat.dumps(meta, arrays))
    assert "value index out of range" in one_error_line(run("dump", path), str(path))


_GRADIENT_SCRIPT = """
import sys
import numpy as np
from crfkit.training.corpus import encode_training
from crfkit.kernels import objective as objective_module
from crfkit.kernels.objective import Objective
from crfkit.features.patterns import read_patterns
from crfkit.io.reader import read_sequences
from itertools import islice
# compile every kernel here (not the loss kernel in a child, which the cache hands back)
objective_module.compile_aside = lambda dispatcher, args: None
corpus = encode_training(read_patterns(sys.argv[1]), list(islice(read_sequences(sys.argv[2]), 300)))
objective = Objective(corpus.space, corpus.data, corpus.empirical, 1.0)
w = np.random.default_rng(0).normal(scale=0.5, size=corpus.space.n_weights)
g = np.empty_like(w)
f = objective(w, g)
sys.stdout.write(np.append(g, f).tobytes().hex())
"""


@pytest.mark.slow
def test_gradient_bits_do_not_depend_on_the_numba_cache(tmp_path):
    """The first run compiles the kernels, later runs load them from the on-disk cache; both
    must compute the same bits (a fastmath flag set once made the cached code differ in the
    last bit, so a model trained right after installing differed from later ones)."""
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    runs = [subprocess.run([sys.executable, "-c", _GRADIENT_SCRIPT, str(PATTERNS), str(TRAIN)],
                           env=env, capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert any((tmp_path / "numba-cache").rglob("*.nbc"))  # the second run loaded the cache
    assert runs[0] and runs[0] == runs[1]
