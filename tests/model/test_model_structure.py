"""The model file, info and dump see a model's structure only through the interface: the
registry picks it from the header, its save/load/compact carry its part of the file, its
describe/dump_rows add to what info and dump print."""

from __future__ import annotations

import io
from dataclasses import replace
from typing import ClassVar

import numpy as np
import pytest

from crfkit import structures
from crfkit.errors import ModelFormatError
from crfkit.io import fileformat
from crfkit.model.describe import dump, info
from crfkit.model.model import Model, compact
from crfkit.structures.base import Description
from crfkit.structures.chain import Chain
from tests.helpers import CHUNK_TRAIN, trained_model


class Marked(Chain):
    """A chain that marks its files, keeps one array of its own and describes itself."""

    name: ClassVar[str] = "marked"
    title: ClassVar[str] = "marked chain"

    @classmethod
    def recognises(cls, meta):
        return meta.get("structure") == cls.name

    def save(self, space, meta, arrays):
        super(Chain, self).save(space, meta, arrays)  # the interface's default: the mark
        arrays["marked_labels"] = np.arange(space.n_labels, dtype=np.int64)

    def load(self, check, space, patterns, model_type, info):
        marks = check.array("marked_labels", np.int64, 1)
        if len(marks) != space.n_labels:
            raise check.fail("marked_labels does not match the labels")
        return space

    def describe(self, model):
        return Description(feature_counts=["0 marked"], lines=[("marked", "yes")])

    def dump_rows(self, model, obs_text, parts):
        parts.observation.append(np.full(0, "", dtype=object))
        parts.prev.append(np.zeros(0, dtype=np.int64))
        parts.label.append(np.zeros(0, dtype=np.int64))
        return np.full(sum(len(p) for p in parts.label), -1, dtype=np.int64)


@pytest.fixture
def marked():
    structures.register(Marked)
    yield Marked
    structures.unregister(Marked)


@pytest.fixture(scope="module")
def chain_model(tmp_path_factory) -> Model:
    folder = tmp_path_factory.mktemp("marked")
    return Model.load(trained_model(folder, "U00:%x[0,0]\n*:%x[0,1]\nB\n", CHUNK_TRAIN,
                                    "-1", "0.5"))


def test_a_chain_file_has_no_mark_and_loads_as_a_chain(chain_model):
    meta, arrays = fileformat.loads(chain_model.to_bytes())
    assert "structure" not in meta and "marked_labels" not in arrays
    assert isinstance(Model.from_bytes(chain_model.to_bytes()).structure, Chain)


def test_the_structure_writes_and_reads_its_part(marked, chain_model):
    model = replace(chain_model, structure=Marked())
    meta, arrays = fileformat.loads(model.to_bytes())
    assert meta["structure"] == "marked" and "marked_labels" in arrays
    again = Model.from_bytes(model.to_bytes())
    assert isinstance(again.structure, Marked)
    np.testing.assert_array_equal(again.weights, model.weights)
    arrays["marked_labels"] = arrays["marked_labels"][:1]
    with pytest.raises(ModelFormatError, match="marked_labels does not match"):
        Model.from_bytes(fileformat.dumps(meta, arrays))


def test_compact_keeps_the_structure(marked, chain_model):
    small = compact(replace(chain_model, structure=Marked()))
    assert isinstance(small.structure, Marked)
    assert isinstance(Model.from_bytes(small.to_bytes()).structure, Marked)


def test_info_and_dump_add_the_structures_lines(marked, chain_model):
    lines = dict(info(replace(chain_model, structure=Marked())))
    assert lines["marked"] == "yes"
    assert lines["features"].endswith(" transition, 0 marked)")
    plain, as_marked = io.StringIO(), io.StringIO()
    dump(chain_model, plain)
    dump(replace(chain_model, structure=Marked()), as_marked)
    assert as_marked.getvalue() == plain.getvalue()  # no rows of its own, prev2 all -1
