import pytest

from crfkit.io.label_sets import is_partial, members, spell


def test_partial_notation():
    assert is_partial("?") and is_partial("B-NP|I-NP")
    assert not is_partial("B-NP") and not is_partial("??x")
    assert members("?") is None
    assert members("B-NP|I-NP") == ("B-NP", "I-NP")
    assert members("O") == ("O",)
    with pytest.raises(ValueError, match="empty member"):
        members("B-NP||I-NP")


def test_spell_round_trips_python_sets():
    assert spell(None) == "?"
    assert spell({"I-NP", "B-NP"}) == "B-NP|I-NP"
    assert members(spell(("O", "B-PER"))) == ("B-PER", "O")
    assert spell("O") == "O"
    with pytest.raises(ValueError):
        spell(set())
