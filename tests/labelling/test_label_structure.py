"""Labelling sees a model's structure only through the interface: its decode, its refusals,
its declared label options (checked and refused for models of other structures), and
whether it labels whole documents."""

from __future__ import annotations

import io
from dataclasses import replace
from typing import ClassVar

import numpy as np
import pytest

from crfkit import structures
from crfkit.errors import UsageError
from crfkit.io.reader import read_items, read_sequences
from crfkit.labelling.label import LabelOptions, encode, encode_sequences, label, label_stream
from crfkit.model.model import Model
from crfkit.options import Option
from crfkit.structures.chain import Chain
from tests.helpers import CHUNK_TRAIN, trained_model

KNOB = Option("toy_knob", ("--toy-knob",), None, "a toy's label option", int, "N",
              check=lambda v: None if v >= 0 else f"--toy-knob must be >= 0, got {v}")
TEST = "the DT\ndog NN\n\n-DOCSTART- -X-\n\nbig JJ\ncat NN\n\nthe DT\n"


class Toy(Chain):
    """A chain that records what labelling asks of it and refuses -n."""

    name: ClassVar[str] = "toy"
    title: ClassVar[str] = "toy chain"
    label_options = (KNOB,)
    documents: ClassVar[bool] = True
    requests: ClassVar[list] = []

    def refuse_labelling(self, asked):
        if asked["-n/--nbest"]:
            raise UsageError("-n/--nbest is not available with a toy model")

    def decode(self, model, data, request):
        Toy.requests.append(request)
        return super().decode(model, data, request)


@pytest.fixture
def toy():
    structures.register(Toy)
    Toy.requests.clear()
    yield Toy
    structures.unregister(Toy)


@pytest.fixture(scope="module")
def chain_model(tmp_path_factory) -> Model:
    folder = tmp_path_factory.mktemp("toy")
    return Model.load(trained_model(folder, "U00:%x[0,0]\nU01:%x[0,1]\nB\n", CHUNK_TRAIN))


def test_decoding_goes_through_the_models_structure(toy, chain_model):
    sequences = list(read_sequences(io.BytesIO(TEST.encode())))
    plain = label(chain_model, sequences)
    as_toy = replace(chain_model, structure=Toy())
    assert [r.labels for r in label(as_toy, sequences)] == [r.labels for r in plain]
    assert len(Toy.requests) == 1 and Toy.requests[0].sequences == sequences


def test_documents_and_option_values_reach_the_structure(toy, chain_model):
    as_toy = replace(chain_model, structure=Toy())
    out = io.StringIO()
    label_stream(as_toy, read_items(io.BytesIO(TEST.encode())), out,
                 LabelOptions(structure={"toy_knob": 3}))
    (request,) = Toy.requests
    assert request.starts == [1]  # the marker before the second sentence
    assert request.values == {"toy_knob": 3}


def test_refusals_are_the_structures(toy, chain_model):
    as_toy = replace(chain_model, structure=Toy())
    with pytest.raises(UsageError, match="not available with a toy model"):
        label(as_toy, [[["the", "DT"]]], nbest=2)
    assert label(chain_model, [[["the", "DT"]]], nbest=2)  # the chain has n-best


def test_a_declared_option_is_checked_and_refused_for_other_structures(toy, chain_model):
    with pytest.raises(UsageError, match=r"--toy-knob must be >= 0, got -1"):
        LabelOptions(structure={"toy_knob": -1}).validate()
    out = io.StringIO()
    with pytest.raises(UsageError, match=r"--toy-knob applies to toy models only \(this one "
                                         r"is a crf: a linear chain\)"):
        label_stream(chain_model, read_items(io.BytesIO(TEST.encode())), out,
                     LabelOptions(structure={"toy_knob": 1}))
    label_stream(chain_model, read_items(io.BytesIO(TEST.encode())), out,
                 LabelOptions(structure={"toy_knob": None}))  # not given: no refusal


def test_a_development_set_is_encoded_as_labelling_encodes(chain_model):
    sequences = list(read_sequences(io.BytesIO(TEST.encode())))
    gold = np.arange(sum(len(s.rows) for s in sequences), dtype=np.int32) % 2
    plain = encode(chain_model, sequences)
    devel = encode_sequences(chain_model.featurizer, sequences, "<devel>", gold)
    for name in ("seq_ptr", "tok_ptr", "tok_obs"):
        np.testing.assert_array_equal(getattr(devel, name), getattr(plain, name))
    np.testing.assert_array_equal(devel.labels, gold)
    assert plain.obs_matrix is not None and devel.obs_matrix is None
