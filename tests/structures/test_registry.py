"""A structure defined only here, registered, chosen by ``--structure`` and trained,
labelled, saved and loaded through the command line: what the interface promises a new
structure (crfkit.structures.base), with no change to crfkit. And the registry's refusals,
one error line each."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from crfkit.errors import UsageError
from crfkit.model.model import Model
from crfkit.options import Option
from crfkit.structures import choose, named, register, unregister
from crfkit.structures.base import Choice
from crfkit.structures.chain import Chain
from crfkit.training.train_options import TrainOptions
from tests.conftest import ADDRESS_PATTERNS
from tests.helpers import one_error_line, run


class Toy(Chain):
    """The chain's model, with its own mark, records and bookkeeping of what it was asked."""

    name: ClassVar[str] = "toy"
    title: ClassVar[str] = "toy chain"
    record_after: ClassVar[str] = "model_type"
    calls: ClassVar[dict[str, int]] = {}
    train_options = (Option("toy_level", ("--toy-level",), None, "toy: a level", int,
                            check=lambda v: None if v >= 0 else f"--toy-level must be >= 0, "
                                                                f"got {v}"),)

    def objective(self, corpus, rho2, normalisation, values):
        chain = super().objective(corpus, rho2, normalisation, values)
        Toy.calls["objective"] = Toy.calls.get("objective", 0) + 1
        return chain

    def decode(self, model, data, request):
        Toy.calls["decode"] = Toy.calls.get("decode", 0) + 1
        return super().decode(model, data, request)

    def recorded(self, values):
        return {"toy": "yes"}

    def training_info(self, corpus, values):
        return {"toy": {"sequences": corpus.data.n_seqs}}

    def heading(self, model_type):
        return f"{model_type} on a toy chain"


class Greedy(Chain):
    """Claims every training: with the toy asked for, two structures are chosen."""

    name: ClassVar[str] = "greedy"
    title: ClassVar[str] = "greedy chain"

    @classmethod
    def claims(cls, choice):
        return True


@pytest.fixture
def toy():
    Toy.calls = {}
    register(Toy)
    yield Toy
    unregister(Toy)


def test_a_toy_structure_trains_labels_saves_and_loads_through_the_cli(toy, address_sample,
                                                                       tmp_path):
    data, test = address_sample["train"], address_sample["test"]
    chain_file, toy_file = tmp_path / "chain.model", tmp_path / "toy.model"
    assert run("train", "-i", "3", "-p", ADDRESS_PATTERNS, data, chain_file).exit_code == 0
    assert Toy.calls == {}  # the chain trained that one
    trained = run("train", "--structure", "toy", "-i", "3", "-d", test, "-p", ADDRESS_PATTERNS,
                  data, toy_file)
    assert trained.exit_code == 0, trained.stderr
    assert "* crf on a toy chain, l-bfgs: " in trained.stderr
    assert Toy.calls["objective"] == 1 and Toy.calls["decode"] == 3  # devel, each iteration
    model, chain = Model.load(toy_file), Model.load(chain_file)
    options = list(model.info["options"])
    assert options[options.index("model_type") + 1] == "toy"
    assert model.info["options"]["toy"] == "yes" and "toy" not in chain.info["options"]
    assert model.info["toy"] == {"sequences": 200}
    np.testing.assert_array_equal(model.weights, chain.weights)  # the chain's model, its way
    for name in ("chain", "toy"):
        out = tmp_path / f"{name}.out"
        labelled = run("label", "-m", tmp_path / f"{name}.model", test, out)
        assert labelled.exit_code == 0, labelled.stderr
    assert (tmp_path / "toy.out").read_bytes() == (tmp_path / "chain.out").read_bytes()


@pytest.mark.skipif(not hasattr(Model, "structure") and
                    "structure" not in getattr(Model, "__dataclass_fields__", {}),
                    reason="the model file does not hold its structure in this tree")
def test_a_toy_model_file_loads_as_the_toy(toy, address_sample, tmp_path):
    path = tmp_path / "toy.model"
    assert run("train", "--structure", "toy", "-i", "2", "-p", ADDRESS_PATTERNS,
               address_sample["train"], path).exit_code == 0
    assert Model.load(path).structure.name == "toy"
    resumed = run("train", "-m", path, "-i", "1", address_sample["train"], tmp_path / "b.model")
    assert resumed.exit_code == 0, resumed.stderr
    assert Model.load(tmp_path / "b.model").structure.name == "toy"


def test_the_registry_refuses_in_one_line(toy, address_sample, tmp_path):
    data = address_sample["train"]
    unknown = run("train", "--structure", "nope", "-p", ADDRESS_PATTERNS, data,
                  tmp_path / "m.model")
    one_error_line(unknown, "unknown structure 'nope'", "chain", "toy")
    chain_file = tmp_path / "chain.model"
    assert run("train", "-i", "1", "-p", ADDRESS_PATTERNS, data, chain_file).exit_code == 0
    resumed = run("train", "--structure", "toy", "-m", chain_file, data, tmp_path / "m.model")
    one_error_line(resumed, "initial model is a linear chain", "cannot continue as a toy chain")
    register(Greedy)
    try:
        both = run("train", "--structure", "toy", "-p", ADDRESS_PATTERNS, data,
                   tmp_path / "m.model")
        one_error_line(both, "two structures", "toy", "greedy")
    finally:
        unregister(Greedy)
    assert not (tmp_path / "m.model").exists()


def test_choose_falls_back_to_the_chain_and_registers_a_name_once(toy):
    assert choose(Choice(None, None, {})).name == "chain"
    assert choose(Choice(None, None, {"structure": "toy"})).name == "toy"
    assert named("toy").title == "toy chain"
    with pytest.raises(ValueError, match="registered already"):
        register(Toy)


def test_a_structures_declared_option_values_are_checked(toy):
    TrainOptions(structure={"toy_level": 2}).validate()
    TrainOptions(structure={"toy_level": None}).validate()  # not given
    with pytest.raises(UsageError, match="--toy-level must be >= 0, got -1"):
        TrainOptions(structure={"toy_level": -1}).validate()


def test_structure_list_names_every_registered_structure(toy):
    listed = run("train", "--structure", "list")
    assert listed.exit_code == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert names == ["chain", "order2", "skipchain", "latent", "toy"]
    assert Toy.title in listed.stdout
