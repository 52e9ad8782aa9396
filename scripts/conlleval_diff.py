#!/usr/bin/env python3
"""Differential check: ``crfkit eval`` against the original ``conlleval`` perl script.

Usage::

    python scripts/conlleval_diff.py PATH/TO/conlleval.pl [--corpus FILE] [--keep DIR]

conlleval.pl is not part of crfkit; give the path to a copy you have. Without
it (or without perl) the script says so and exits 0, so it can sit in CI.

It writes a set of evaluation files (a real corpus with a seeded, perturbed
prediction column; IOBES, IOE, bracket, hyphenated, untyped and non-ASCII
tags; -DOCSTART- and -X- lines; empty, chunk-less and malformed files), runs
both programs on each with several option sets, and compares stdout byte for
byte and success/failure. Exit status: 0 when all agree, 1 otherwise.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_CORPUS = Path("/work/shared/data/conll2000/test.txt")

OPTION_SETS: list[list[str]] = [[], ["-r"], ["-l"], ["-r", "-l"], ["-o", "NONE"],
                                ["-r", "-o", "NONE"], ["-d", " "]]


# ---------------------------------------------------------------------------
# Test files


def read_corpus(path: Path) -> list[list[tuple[str, str]]]:
    """Sentences of (word, chunk tag) from a CoNLL-2000 style file."""
    sentences: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if not fields:
            if current:
                sentences.append(current)
            current = []
        else:
            current.append((fields[0], fields[-1]))
    if current:
        sentences.append(current)
    return sentences


def perturb(tags: list[str], rng: random.Random, types: list[str], rate: float) -> list[str]:
    """Seeded prediction errors: wrong types, B<->I swaps, O's, spurious chunks."""
    out = []
    for tag in tags:
        if rng.random() >= rate:
            out.append(tag)
            continue
        prefix, _, kind = tag.partition("-")
        roll = rng.randrange(4)
        if roll == 0 and kind:
            out.append(f"{prefix}-{rng.choice(types)}")
        elif roll == 1 and prefix in ("B", "I"):
            out.append(("I" if prefix == "B" else "B") + "-" + kind)
        elif roll == 2:
            out.append("O")
        else:
            out.append(f"{rng.choice('BI')}-{rng.choice(types)}")
    return out


def to_iobes(tags: list[str]) -> list[str]:
    """IOB2 -> IOBES (S for one-word chunks, E for last words)."""
    out = []
    for i, tag in enumerate(tags):
        nxt = tags[i + 1] if i + 1 < len(tags) else "O"
        prefix, _, kind = tag.partition("-")
        continues = nxt == f"I-{kind}"
        if prefix == "B":
            out.append(f"B-{kind}" if continues else f"S-{kind}")
        elif prefix == "I":
            out.append(f"I-{kind}" if continues else f"E-{kind}")
        else:
            out.append(tag)
    return out


def to_ioe1(tags: list[str]) -> list[str]:
    """IOB2 -> IOE1 (E only on a chunk's last word when a same-type chunk follows)."""
    out = []
    for i, tag in enumerate(tags):
        nxt = tags[i + 1] if i + 1 < len(tags) else "O"
        prefix, _, kind = tag.partition("-")
        if prefix == "O":
            out.append(tag)
        elif nxt == f"B-{kind}":
            out.append(f"E-{kind}")
        else:
            out.append(f"I-{kind}")
    return out


def corpus_files(corpus: Path) -> dict[str, str]:
    """Files derived from a real corpus with a seeded predicted column."""
    sentences = read_corpus(corpus)
    types = sorted({t.partition("-")[2] for s in sentences for _, t in s} - {""})
    files: dict[str, str] = {}
    variants = {
        "corpus": lambda tags: tags,
        "corpus-iobes": to_iobes,
        "corpus-ioe1": to_ioe1,
        "corpus-hyphen": lambda tags: [t.replace("NP", "NP-X-Y") for t in tags],
    }
    for name, convert in variants.items():
        rng = random.Random(20240601)
        lines = []
        for sentence in sentences:
            gold = convert([t for _, t in sentence])
            pred = perturb(gold, rng, types, 0.08)
            if name == "corpus-iobes":  # IOBES-style errors too
                pred = [rng.choice("SE") + t[1:] if t[:1] in "BI" and rng.random() < 0.02
                        else t for t in pred]
            lines += [f"{w} POS {g} {p}" for (w, _), g, p in zip(sentence, gold, pred, strict=True)]
            lines.append("")
        files[name] = "\n".join(lines) + "\n"
    # The same perturbed corpus tab-separated, and raw (prefix-less) tags.
    files["corpus-tab"] = files["corpus"].replace(" ", "\t")
    raw_lines = []
    for line in files["corpus"].split("\n")[:20000]:
        fields = line.split(" ")
        if len(fields) == 4:
            fields[2:] = [t.partition("-")[2] or "O" for t in fields[2:]]
            fields[2:] = ["NONE" if t == "O" and i % 3 else t for i, t in enumerate(fields[2:])]
        raw_lines.append(" ".join(fields))
    files["corpus-raw"] = "\n".join(raw_lines) + "\n"
    return files


def random_soup(rng: random.Random, n: int, alphabet: list[str]) -> str:
    """Random tag sequences over an alphabet, with sentence breaks."""
    lines = []
    for i in range(n):
        if rng.random() < 0.08:
            lines.append("" if rng.random() < 0.7 else "-X- -X- -X-")
        else:
            lines.append(f"w{i} {rng.choice(alphabet)} {rng.choice(alphabet)}")
    return "\n".join(lines) + "\n"


def synthetic_files() -> dict[str, str]:
    """Small files aimed at conlleval's rules and quirks."""
    rng = random.Random(7)
    files = {
        "empty": "",
        "blank-lines-only": "\n\n\n",
        "one-token": "a B-NP B-NP\n",
        "no-chunks": "a O O\nb O O\n\nc O O\n",
        "no-newline-open-chunk": "a B-NP B-NP\nb I-NP I-NP",
        "docstart": "-DOCSTART- -X- O O\n\na B-PER B-PER\nb I-PER O\n\n"
                    "-DOCSTART- -X- O O\n\nc B-LOC B-LOC\n",
        "x-boundaries": "a B-NP B-NP\n-X- -X- -X-\nb I-NP I-NP\n-X- x y\nc I-NP B-NP\n",
        "iob1": "a I-NP I-NP\nb I-NP I-NP\nc B-NP I-NP\nd O O\ne I-VP I-NP\n",
        "type-change": "a B-NP B-NP\nb I-VP I-NP\nc I-VP I-VP\n",
        "iobes-adjacent": "a S-PER S-PER\nb S-PER B-PER\nc B-PER E-PER\nd E-PER O\n"
                          "e B-LOC B-LOC\nf E-LOC E-LOC\ng B-LOC B-LOC\nh E-LOC E-LOC\n",
        "brackets": "a [-NP [-NP\nb ]-NP ]-NP\nc [ [\nd ] O\ne [-NP B-NP\nf O ]-NP\n",
        "hyphens": "a B-DATE-TIME B-DATE-TIME\nb I-DATE-TIME I-DATE\nc B-X-Y-Z B-X-Y-Z\n"
                   "d -A -A\ne B- B-\nf I- I-\n",
        "untyped": "a NP NP\nb B-NP NP\nc NP B-NP\nd VP VP\ne O B\nf B B\ng I I\n",
        "zero-type": "a B-0 B-0\nb I-0 I-0\nc B- B-0\nd O B-0\n",
        "dot-prefix": "a B-NP B-NP\nb .-NP .-NP\n\nc I-NP I-NP\nd . .\ne .-VP O\n",
        "unicode": "ä B-PERSÖN B-PERSÖN\nö I-PERSÖN O\nü B-ÄÖ B-ÄÖ\né B-Zé B-Zé\n",
        "two-columns": "B-NP B-NP\nI-NP I-NP\nO B-VP\n\nB-PP B-PP\n",
        "raw-outside": "a NONE NONE\nb PER PER\nc PER NONE\nd O O\ne LOC O\nf NONE LOC\n",
        "double-space": "a  B-NP B-NP\nb I-NP I-NP\n",
        "trailing-space": "a B-NP B-NP \nb I-NP I-NP  \n",
        "bad-varying-fields": "a B B-NP B-NP\nb I-NP I-NP\n",
        "bad-one-field": "a\nb\n",
        "bad-one-field-later": "a B-NP B-NP\nb\n",
        "x-only-one-field": "-X-\n-X-\n",
    }
    soups = {
        "soup-iob": ["O", "B-NP", "I-NP", "B-VP", "I-VP", "B-PP"],
        "soup-iobes": ["O", "B-A", "I-A", "E-A", "S-A", "B-B", "I-B", "E-B", "S-B"],
        "soup-weird": ["O", "B-A", "I-A", "E-A", "[-A", "]-A", "[", "]", ".", ".-A", "A",
                       "B", "I", "E", "S-A", "X-A", "B-A-B", "I-A-B", "-A", "B-", "B-0",
                       "NONE"],
    }
    for name, alphabet in soups.items():
        for k in range(3):
            files[f"{name}-{k}"] = random_soup(rng, 3000, alphabet)
    return files


# ---------------------------------------------------------------------------
# Running


def run_perl(conlleval: Path, path: Path, options: list[str]) -> tuple[bool, bytes]:
    with path.open("rb") as handle:
        proc = subprocess.run(["perl", str(conlleval), *options], stdin=handle,
                              capture_output=True, check=False)
    return proc.returncode == 0, proc.stdout


def run_crfkit(path: Path, options: list[str]) -> tuple[bool, bytes]:
    """Run ``crfkit eval`` in-process through click, as main() would."""
    from click.testing import CliRunner

    from crfkit.cli import cli
    from crfkit.errors import CrfkitError

    result = CliRunner().invoke(cli, ["eval", str(path), *options])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        if not isinstance(result.exception, CrfkitError):
            raise result.exception
        return False, result.stdout_bytes
    return result.exit_code == 0, result.stdout_bytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("conlleval", nargs="?", help="path to conlleval.pl")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                        help="CoNLL-2000 style file (word ... chunk tag) to perturb")
    parser.add_argument("--keep", type=Path, help="write the test files here and keep them")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every comparison")
    args = parser.parse_args(argv)

    if not args.conlleval or not Path(args.conlleval).is_file():
        print(f"skip: conlleval.pl not found ({args.conlleval or 'no path given'})")
        return 0
    if shutil.which("perl") is None:
        print("skip: perl is not installed")
        return 0
    conlleval = Path(args.conlleval)

    files = synthetic_files()
    if args.corpus.is_file():
        files.update(corpus_files(args.corpus))
    else:
        print(f"note: corpus {args.corpus} not found; synthetic files only")

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="conlleval-diff-"))
    workdir.mkdir(parents=True, exist_ok=True)
    compared = failures = 0
    try:
        for name, text in files.items():
            path = workdir / f"{name}.txt"
            path.write_bytes(text.encode("utf-8"))
            option_sets = list(OPTION_SETS)
            if name == "corpus-tab":
                option_sets = [["-d", "\t"], ["-d", "\\t"], ["-d", "\t", "-l"]]
            elif name == "double-space":  # only conlleval's single-space split sees 4 fields
                option_sets = [["-d", " "], ["-d", " ", "-r"]]
            for options in option_sets:
                expected = run_perl(conlleval, path, options)
                got = run_crfkit(path, options)
                compared += 1
                same = expected == got
                if args.verbose or not same:
                    print(f"{'same' if same else 'DIFF'}: {name} {' '.join(map(repr, options))}")
                if not same:
                    failures += 1
                    for who, (ok, output) in (("conlleval", expected), ("crfkit", got)):
                        print(f"  {who} (ok={ok}):\n{output.decode(errors='replace')}")
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"{compared} comparisons on {len(files)} files: "
          f"{compared - failures} identical, {failures} different")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
