"""scripts/partial_labels.py: the partially labelled training files of the experiments,
checked on tiny files whose expected output is written out by hand."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import load_script

script = load_script("partial_labels")

CHUNKS = ("He PRP B-NP\nreckons VBZ B-VP\nthe DT B-NP\ndeficit NN I-NP\n\n"
          "It PRP B-NP\nwill MD B-VP\nfall VB I-VP\n")


def labels(path: Path) -> list[str]:
    return [line.split()[-1] if line.strip() else "" for line in
            path.read_text().splitlines()]


def make(tmp_path: Path, text: str, *args: str) -> Path:
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text(text)
    script.main([*args, str(src), str(out)])
    return out


def test_hide_replaces_an_exact_seeded_fraction(tmp_path):
    out = make(tmp_path, CHUNKS, "hide", "--fraction", "0.5", "--seed", "3")
    got = labels(out)
    assert got.count("?") == 4  # round(0.5 * 7)
    original = labels(tmp_path / "in.txt")
    assert all(g in ("?", o) for g, o in zip(got, original, strict=True))
    assert labels(make(tmp_path, CHUNKS, "hide", "--fraction", "0.5", "--seed", "3")) == got
    assert [line.rsplit(" ", 1)[0] for line in out.read_text().splitlines()] == \
        [line.rsplit(" ", 1)[0] for line in CHUNKS.splitlines()]  # other columns kept
    naive = labels(make(tmp_path, CHUNKS, "hide", "--seed", "3", "--naive"))
    assert naive == [("O" if g == "?" else g) for g in got]


def test_keep_type_and_its_variants(tmp_path):
    assert labels(make(tmp_path, CHUNKS, "keep-type", "--type", "NP")) == \
        ["B-NP", "?", "B-NP", "I-NP", "", "B-NP", "?", "?"]
    assert labels(make(tmp_path, CHUNKS, "keep-type", "--naive")) == \
        ["B-NP", "O", "B-NP", "I-NP", "", "B-NP", "O", "O"]
    assert labels(make(tmp_path, CHUNKS, "keep-type", "--type", "VP", "--complement")) == \
        ["B-NP|I-NP", "B-VP", "B-NP|I-NP", "B-NP|I-NP", "", "B-NP|I-NP", "B-VP", "I-VP"]


NER = ("-DOCSTART- -DOCSTART- O\n"
       "Jan B-PER\nde I-PER\nVries I-PER\nwoont O\nin O\nParijs B-LOC\n\n"
       "Ajax B-ORG\nwint O\n\n"
       "Ajax B-MISC\nspeelt O\n\n"
       "Jan B-PER\nziet O\nJan B-PER\nde I-PER\nVries I-PER\nin O\nParijs B-LOC\n\n"
       "Ajax B-ORG\nde O\nvries O\n")


def test_dictionary_labels_the_first_halfs_names_longest_first(tmp_path):
    # first half = the first 2 of 5 sentences: names (Jan de Vries: PER), (Parijs: LOC),
    # (Ajax: ORG); Ajax is MISC only in the second half, so it stays ORG alone
    got = labels(make(tmp_path, NER, "dictionary"))
    assert got == ["O",  # the -DOCSTART- line is copied
                   "B-PER", "I-PER", "I-PER", "?", "?", "B-LOC", "",
                   "B-ORG", "?", "",
                   "B-ORG", "?", "",
                   "?", "?", "B-PER", "I-PER", "I-PER", "?", "B-LOC", "",
                   "B-ORG", "?", "?"]  # Jan alone is not a listed name
    lower = labels(make(tmp_path, NER, "dictionary", "--outside-lowercase"))
    assert lower[4:6] == ["O", "O"] and lower[14] == "?"  # Jan: capitalised, unmatched
    common = labels(make(tmp_path, NER, "dictionary", "--outside-common"))
    assert common == lower  # no unmatched capitalised word of NER occurs in lower case
    text = NER.replace("Ajax B-ORG\nde O\nvries O\n", "Ajax B-ORG\nWint O\n")
    common = labels(make(tmp_path, text, "dictionary", "--outside-common"))
    assert common[-1] == "O" and common[14] == "?"  # Wint: wint is a token; Jan is not
    naive = labels(make(tmp_path, NER, "dictionary", "--naive"))
    assert "?" not in naive and naive[14] == "O"


def test_dictionary_names_seen_with_several_types_become_label_sets(tmp_path):
    text = "Ajax B-ORG\n\nAjax B-MISC\n\nAjax B-ORG\nAmsterdam I-ORG\n\nx O\n\nAjax O\n\nx O\n"
    assert labels(make(tmp_path, text, "dictionary")) == \
        ["B-MISC|B-ORG", "", "B-MISC|B-ORG", "", "B-ORG", "I-ORG", "", "?", "",
         "B-MISC|B-ORG", "", "?"]
    # naive: no sets; Ajax was MISC once and ORG once: the tie goes to the first name
    assert labels(make(tmp_path, text, "dictionary", "--naive")) == \
        ["B-MISC", "", "B-MISC", "", "B-ORG", "I-ORG", "", "O", "", "B-MISC", "", "O"]
    text = text.replace("Ajax B-MISC\n\n", "Ajax B-ORG\n\nAjax B-MISC\n\n", 1)
    assert labels(make(tmp_path, text, "dictionary", "--naive"))[0] == "B-ORG"  # 2 to 1
