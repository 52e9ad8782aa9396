"""Which decoder ``crfkit label`` uses for the plain best path.

numpy's (:mod:`crfkit.kernels.bestpath`) by default; Numba's for a model with
observation bigrams and a large input file (:func:`crfkit.labelling.label.kernel_decoding_pays`),
where it is faster start-up included, and the fused compiled kernel for a large input file
and a model without them (:func:`crfkit.labelling.label.fused_decoding_pays`). All give the
same output, byte for byte.
"""

from __future__ import annotations

import pytest

from crfkit.kernels import bestpath, decoder, fusedpath
from crfkit.labelling import label as label_module
from crfkit.model.model import Model
from tests.helpers import ROOT, run

BIGRAMS = "*:%x[0,0]\nu:%x[-1,0]/%x[0,0]\n*:%x[0,1]\n"
PLAIN = "U00:%x[0,0]\nU01:%x[0,1]\nB\n"
FUSED = fusedpath.fused_best_paths


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("choice")
    out = {}
    for name, text in (("bigrams", BIGRAMS), ("plain", PLAIN)):
        (tmp / f"{name}.pat").write_text(text)
        out[name] = tmp / f"{name}.model"
        result = run("train", "-q", "-i", "20", "-p", tmp / f"{name}.pat",
                     ROOT / "data/address-train.txt", out[name])
        assert result.exit_code == 0, result.stderr
    return out


@pytest.fixture
def calls(monkeypatch):
    """How often each decoder ran."""
    seen = {"numpy": 0, "numba": 0}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            seen[name] += 1
            return function(*args, **kwargs)
        return wrapper

    # the chain's decode imports them when it runs: the counted ones
    monkeypatch.setattr(bestpath, "best_paths", counted("numpy", bestpath.best_paths))
    monkeypatch.setattr(decoder, "decode", counted("numba", decoder.decode))
    return seen


def test_a_large_file_with_observation_bigrams_goes_through_numba(models, calls, tmp_path,
                                                                    monkeypatch):
    test = ROOT / "data/address-test.txt"
    piped = run("label", "-m", models["bigrams"], input=test.read_bytes())
    assert piped.exit_code == 0, piped.stderr
    assert calls == {"numpy": 1, "numba": 0}  # a pipe: numpy, whatever its size
    monkeypatch.setattr(label_module, "KERNEL_DECODING_BYTES", test.stat().st_size)
    result = run("label", "-m", models["bigrams"], test, tmp_path / "out.txt")
    assert result.exit_code == 0, result.stderr
    assert calls == {"numpy": 1, "numba": 1}
    assert (tmp_path / "out.txt").read_text() == piped.stdout


def test_small_files_and_models_without_bigrams_stay_numpy(models, calls, tmp_path,
                                                          monkeypatch):
    test = ROOT / "data/address-test.txt"
    size = test.stat().st_size
    monkeypatch.setattr(label_module, "KERNEL_DECODING_BYTES", size + 1)
    assert run("label", "-m", models["bigrams"], test, tmp_path / "a.txt").exit_code == 0
    monkeypatch.setattr(label_module, "KERNEL_DECODING_BYTES", size)
    assert run("label", "-m", models["plain"], test, tmp_path / "b.txt").exit_code == 0
    assert calls == {"numpy": 2, "numba": 0}


def test_kernel_decoding_pays_only_for_large_regular_files(models, tmp_path, monkeypatch):
    bigrams, plain = Model.load(models["bigrams"]), Model.load(models["plain"])
    assert bigrams.space.n_b > 0 and plain.space.n_b == 0
    big = tmp_path / "big.txt"
    big.write_text("x y\n" * 10)
    monkeypatch.setattr(label_module, "KERNEL_DECODING_BYTES", 40)
    assert label_module.kernel_decoding_pays(bigrams, str(big))
    assert not label_module.kernel_decoding_pays(plain, str(big))
    assert not label_module.kernel_decoding_pays(bigrams, "-")
    assert not label_module.kernel_decoding_pays(bigrams, str(tmp_path))  # not a file
    monkeypatch.setattr(label_module, "KERNEL_DECODING_BYTES", 41)
    assert not label_module.kernel_decoding_pays(bigrams, str(big))


def test_a_large_file_without_observation_bigrams_goes_through_the_fused_kernel(
        models, calls, tmp_path, monkeypatch):
    fused = []
    monkeypatch.setattr(fusedpath, "fused_best_paths",
                        lambda *a, **k: fused.append(1) or FUSED(*a, **k))
    test = ROOT / "data/address-test.txt"
    piped = run("label", "-c", "-m", models["plain"], input=test.read_bytes())
    assert piped.exit_code == 0, piped.stderr
    assert calls == {"numpy": 1, "numba": 0} and not fused  # a pipe: numpy
    monkeypatch.setattr(label_module, "FUSED_DECODING_BYTES", test.stat().st_size)
    result = run("label", "-c", "-m", models["plain"], test, tmp_path / "out.txt")
    assert result.exit_code == 0, result.stderr
    assert calls == {"numpy": 1, "numba": 0} and len(fused) == 2  # loaded, then labelled
    assert (tmp_path / "out.txt").read_text() == piped.stdout
    notes = [line for line in result.stderr.splitlines() if "compiling" not in line]
    assert notes == piped.stderr.splitlines()  # the same accuracy line (a cold cache: a note)
    assert not label_module.fused_decoding_pays(Model.load(models["bigrams"]), str(test))
    monkeypatch.setattr(label_module, "FUSED_DECODING_BYTES", test.stat().st_size + 1)
    assert not label_module.fused_decoding_pays(Model.load(models["plain"]), str(test))
