"""Make partially labelled training files from fully labelled ones (CoNLL column files:
one token a line, the label last, blank lines between sentences), for the partial-label
experiments of the manual (docs/guides/partial-labels.md). Every choice is seeded, so a
file is the same on every run.

``hide --fraction 0.5 --seed 1 IN OUT``
    The labels of a random 50% of the tokens become ``?`` (exactly round(fraction * n)
    tokens, drawn without replacement). ``--naive`` writes ``O`` instead: what a tool
    without partial labels would be trained on.

``keep-type --type NP IN OUT``
    Only the labels of tokens inside chunks of one type (``B-NP``, ``I-NP``) are kept:
    an annotation that marks one kind of chunk. The other tokens get ``?`` (any label),
    or with ``--complement`` the set of every other label of IN (the annotation is read
    as exhaustive: a token left out is known not to be in such a chunk), or with
    ``--naive`` ``O``. With ``?`` alone the file names no label but the kept type's, so
    training knows no other label to predict; ``--complement`` names them.

``dictionary IN OUT`` (CoNLL-2002 style NER data)
    Dictionary supervision, the setting of Tsuboi et al. (2008) for entity names: the
    only knowledge is a list of names with their types, here every entity of the first
    half of IN (by sentences; a name seen with several types keeps all of them). Every
    occurrence of a listed name in IN (first and second half alike; exact, case-sensitive
    string match within a sentence; the longest name wins, scanning left to right) is
    labelled as that name: ``B-PER I-PER``, or a label set ``B-ORG|B-PER I-ORG|I-PER``
    for a name with several types. A match says nothing about the tokens around it, and
    an unlisted name is not an error of the list, so every other token is ``?`` (any
    label): training sums over every labelling consistent with the matches. The gold
    labels of IN are used only to build the list. Variants: ``--outside-lowercase``
    labels ``O`` the unmatched tokens without an upper-case letter (a name in these
    corpora starts with a capital; this gives the model the outside label it otherwise
    never sees, at the price of the lower-case words inside names, ``van``, ``de``);
    ``--outside-common`` also labels ``O`` a capitalised unmatched token whose lower-case
    form occurs in IN as a token (a common word: ``De`` at a sentence start, as ``de``
    elsewhere), evidence from the text alone, no gold label; ``--naive`` labels every
    unmatched token ``O`` and a name of several types with the
    one it had most often, as a tool without partial labels must. ``-DOCSTART-`` lines
    are copied as they are.

    python scripts/partial_labels.py hide --fraction 0.5 --seed 1 train.txt hidden.txt
    python scripts/partial_labels.py keep-type --type NP train.txt np.txt
    python scripts/partial_labels.py dictionary ned.train ned.dict
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crfkit.io.atomic import atomic_output  # noqa: E402
from crfkit.io.label_sets import ANY, spell  # noqa: E402

DOCSTART = "-DOCSTART-"
_LAST_FIELD = re.compile(r"^(.*?)(\S+)(\s*)$", re.DOTALL)


@dataclass
class Token:
    """One token line: the text before the label, the label, what follows it."""

    head: str
    label: str
    tail: str

    @property
    def word(self) -> str:
        return self.head.split(None, 1)[0] if self.head.strip() else self.label

    def line(self) -> str:
        return f"{self.head}{self.label}{self.tail}"


Item = Token | str  # a token, or a line copied as it is (blank, -DOCSTART-)


def read_items(path: str) -> list[Item]:
    """The lines of a column file: tokens, and the other lines as text."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        lines = f.readlines()
    items: list[Item] = []
    for line in lines:
        if not line.strip() or line.startswith(DOCSTART):
            items.append(line)
        else:
            head, label, tail = _LAST_FIELD.match(line).groups()  # type: ignore[union-attr]
            items.append(Token(head, label, tail))
    return items


def write_items(path: str, items: list[Item]) -> None:
    """Write the lines back, atomically, byte for byte where untouched."""
    with atomic_output(path, binary=True) as out:
        for item in items:
            text = item.line() if isinstance(item, Token) else item
            out.write(text.encode("utf-8", "surrogateescape"))


def sentences(items: list[Item]) -> Iterator[list[Token]]:
    """The runs of consecutive tokens."""
    run: list[Token] = []
    for item in items:
        if isinstance(item, Token):
            run.append(item)
        elif run:
            yield run
            run = []
    if run:
        yield run


def hide(items: list[Item], fraction: float, seed: int, replacement: str) -> int:
    """Replace the labels of round(fraction * n) random tokens; how many were replaced."""
    tokens = [item for item in items if isinstance(item, Token)]
    chosen = random.Random(seed).sample(range(len(tokens)), round(fraction * len(tokens)))
    for i in chosen:
        tokens[i].label = replacement
    return len(chosen)


def keep_type(items: list[Item], kind: str, rest: str) -> int:
    """Keep ``B-kind``/``I-kind`` labels, give the other tokens ``rest``; how many kept.

    ``rest`` is a label, ``?``, or ``complement``: the set of the file's other labels.
    """
    tokens = [item for item in items if isinstance(item, Token)]
    inside = {f"B-{kind}", f"I-{kind}"}
    if rest == "complement":
        rest = spell({t.label for t in tokens} - inside)
    kept = 0
    for token in tokens:
        if token.label in inside:
            kept += 1
        else:
            token.label = rest
    return kept


def chunks(tokens: list[Token]) -> Iterator[tuple[int, int, str]]:
    """(start, end, type) of the IOB2/IOB1 chunks of a sentence's gold labels."""
    start, kind = None, ""
    for i, token in enumerate([*tokens, Token("", "O", "")]):
        prefix, _, t = token.label.partition("-")
        if start is not None and (prefix != "I" or t != kind):
            yield start, i, kind
            start = None
        if start is None and prefix in ("B", "I"):
            start, kind = i, t


def name_list(items: list[Item]) -> dict[tuple[str, ...], Counter[str]]:
    """Every entity of the first half of the sentences, with how often it had each type."""
    all_sentences = list(sentences(items))
    names: dict[tuple[str, ...], Counter[str]] = defaultdict(Counter)
    for tokens in all_sentences[: len(all_sentences) // 2]:
        for start, end, kind in chunks(tokens):
            names[tuple(t.word for t in tokens[start:end])][kind] += 1
    return dict(names)


def name_types(seen: Counter[str], one: bool) -> set[str]:
    """The types a match is labelled with: all those seen, or with ``one`` the most
    frequent (the first by name on a tie), for a tool that knows no label sets."""
    if not one:
        return set(seen)
    return {min(seen, key=lambda kind: (-seen[kind], kind))}


def dictionary(items: list[Item], unmatched: str) -> tuple[int, int]:
    """Label the listed names' occurrences (longest first); (names listed, tokens matched).

    ``unmatched`` is the label of the other tokens: ``?``, ``O``, ``lowercase-O`` (``O``
    for tokens without an upper-case letter, ``?`` for the others) or ``common-O`` (also
    ``O`` for the capitalised ones whose lower-case form is a token of the file).
    """
    names = name_list(items)
    longest = max((len(n) for n in names), default=0)
    common = {item.word for item in items if isinstance(item, Token) and not _capitalised(
        item.word)} if unmatched == "common-O" else set()
    matched = 0
    for tokens in sentences(items):
        words = [t.word for t in tokens]
        labels = [_unmatched_label(w, unmatched, common) for w in words]
        i = 0
        while i < len(tokens):
            size = next((n for n in range(min(longest, len(tokens) - i), 0, -1)
                         if tuple(words[i:i + n]) in names), 0)
            if not size:
                i += 1
                continue
            kinds = name_types(names[tuple(words[i:i + size])], unmatched == "O")
            labels[i] = spell({f"B-{k}" for k in kinds})
            for j in range(i + 1, i + size):
                labels[j] = spell({f"I-{k}" for k in kinds})
            matched += size
            i += size
        for token, label in zip(tokens, labels, strict=True):
            token.label = label
    return len(names), matched


def _capitalised(word: str) -> bool:
    return any(c.isupper() for c in word)


def _unmatched_label(word: str, unmatched: str, common: set[str]) -> str:
    if unmatched == "lowercase-O":
        return ANY if _capitalised(word) else "O"
    if unmatched == "common-O":
        return ANY if _capitalised(word) and word.lower() not in common else "O"
    return unmatched


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("hide", help="replace the labels of a random fraction of tokens by ?")
    p.add_argument("--fraction", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--naive", action="store_true", help="write O instead of ?")
    p = sub.add_parser("keep-type", help="keep only the labels inside chunks of one type")
    p.add_argument("--type", dest="kind", default="NP")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--naive", action="store_true", help="O elsewhere instead of ?")
    group.add_argument("--complement", action="store_true",
                       help="elsewhere, the set of the file's other labels instead of ?")
    p = sub.add_parser("dictionary", help="label the occurrences of a name list, ? elsewhere")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--naive", action="store_true", help="O elsewhere instead of ?")
    group.add_argument("--outside-lowercase", action="store_true",
                       help="O for unmatched tokens without an upper-case letter")
    group.add_argument("--outside-common", action="store_true",
                       help="O also for capitalised unmatched tokens seen in lower case")
    for p in sub.choices.values():
        p.add_argument("input")
        p.add_argument("output")
    args = parser.parse_args(argv)
    items = read_items(args.input)
    if args.command == "hide":
        if not 0 <= args.fraction <= 1:
            parser.error("--fraction must lie between 0 and 1")
        n = hide(items, args.fraction, args.seed, "O" if args.naive else ANY)
        message = f"{n} labels replaced"
    elif args.command == "keep-type":
        rest = "O" if args.naive else "complement" if args.complement else ANY
        message = f"{keep_type(items, args.kind, rest)} labels kept"
    else:
        unmatched = ("O" if args.naive else "lowercase-O" if args.outside_lowercase
                     else "common-O" if args.outside_common else ANY)
        listed, matched = dictionary(items, unmatched)
        message = f"{listed} names listed, {matched} tokens matched"
    write_items(args.output, items)
    print(f"{args.output}: {message}", file=sys.stderr)


if __name__ == "__main__":
    main()
