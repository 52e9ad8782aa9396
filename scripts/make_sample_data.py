"""Generate the quick-start corpus in data/: postal addresses split into fields.

The corpus is synthetic and written for crfkit (no existing corpus is copied).
Each address is one sequence; columns are the token, a coarse shape, and the
IOB2 label of the field (HOUSE, STREET, UNIT, CITY, STATE, ZIP, COUNTRY).
Ambiguity is built in: street names that are also city names, optional and
reordered fields, lower-cased and abbreviated variants, so that the model
must use context rather than memorise words.

    python scripts/make_sample_data.py [OUTDIR]
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

NAMES = ["Washington", "Lincoln", "Jackson", "Madison", "Franklin", "Clinton", "Salem",
         "Springfield", "Georgetown", "Arlington", "Fairview", "Greenville", "Bristol", "Dover",
         "Oakland", "Riverside", "Chester", "Milton", "Auburn", "Kingston", "Ashland", "Marion"]
TREES = ["Oak", "Maple", "Pine", "Cedar", "Elm", "Birch", "Willow", "Walnut", "Chestnut",
         "Spruce", "Aspen", "Magnolia", "Sycamore", "Hickory", "Laurel", "Juniper"]
ORDINALS = ["1st", "2nd", "3rd", "4th", "5th", "7th", "9th", "10th", "12th", "42nd"]
SUFFIXES = ["Street", "St", "St.", "Avenue", "Ave", "Road", "Rd", "Boulevard", "Blvd", "Lane",
            "Ln", "Drive", "Dr", "Court", "Ct", "Way", "Place", "Pl", "Terrace", "Parkway"]
DIRECTIONS = ["North", "South", "East", "West", "N", "S", "E", "W", "NE", "SW"]
UNITS = [("Apt", True), ("Apt.", True), ("Suite", True), ("Ste", True), ("Unit", True),
         ("#", True), ("Floor", True), ("Fl", True), ("Room", True), ("Building", True)]
STATES = ["CA", "NY", "TX", "WA", "OR", "MA", "IL", "OH", "GA", "VA", "NC", "PA", "FL", "MI",
          "California", "Texas", "Oregon", "Virginia", "Ohio", "Georgia"]
COUNTRIES = ["USA", "US", "United States", "U.S.A."]
EXTRA_CITIES = ["Portland", "Austin", "Boston", "Denver", "Seattle", "Atlanta", "Houston",
                "Phoenix", "Columbus", "Raleigh", "Detroit", "Tampa", "Albany", "Eugene",
                "Saint Paul", "Des Moines", "Los Angeles", "New York", "Salt Lake City"]


def shape(token: str) -> str:
    """Coarse word shape: X upper, x lower, d digit, other characters kept; runs collapsed."""
    out = []
    for ch in token:
        s = "X" if ch.isupper() else "x" if ch.islower() else "d" if ch.isdigit() else ch
        if not out or out[-1] != s:
            out.append(s)
    return "".join(out)


def field(words: list[str], label: str) -> list[tuple[str, str]]:
    return [(w, ("B-" if i == 0 else "I-") + label) for i, w in enumerate(words)]


def street(rng: random.Random) -> list[str]:
    words = []
    if rng.random() < 0.2:
        words.append(rng.choice(DIRECTIONS))
    kind = rng.random()
    if kind < 0.45:
        words.append(rng.choice(NAMES))
    elif kind < 0.8:
        words.append(rng.choice(TREES))
    else:
        words.append(rng.choice(ORDINALS))
    if rng.random() < 0.15:
        words.append(rng.choice(TREES))
    words.append(rng.choice(SUFFIXES))
    return words


def unit(rng: random.Random) -> list[str]:
    word, _ = rng.choice(UNITS)
    number = str(rng.randint(1, 999)) if rng.random() < 0.8 else rng.choice("ABCDEFGH")
    return [word + number] if word == "#" and rng.random() < 0.5 else [word, number]


def zip_code(rng: random.Random) -> list[str]:
    code = f"{rng.randint(501, 99950):05d}"
    return [code + f"-{rng.randint(0, 9999):04d}"] if rng.random() < 0.25 else [code]


def address(rng: random.Random) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    comma = [(",", "O")]
    tokens += field([str(rng.randint(1, 19999))], "HOUSE")
    tokens += field(street(rng), "STREET")
    if rng.random() < 0.35:
        tokens += (comma if rng.random() < 0.6 else []) + field(unit(rng), "UNIT")
    city = rng.choice(NAMES + EXTRA_CITIES + EXTRA_CITIES)
    tokens += (comma if rng.random() < 0.8 else []) + field(city.split(), "CITY")
    tokens += (comma if rng.random() < 0.5 else []) + field([rng.choice(STATES)], "STATE")
    if rng.random() < 0.85:
        tokens += field(zip_code(rng), "ZIP")
    if rng.random() < 0.2:
        tokens += (comma if rng.random() < 0.5 else []) + field(
            rng.choice(COUNTRIES).split(), "COUNTRY")
    if rng.random() < 0.1:
        tokens = [(w.lower(), y) for w, y in tokens]
    return tokens


def write(path: Path, rng: random.Random, n: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for _ in range(n):
            for word, label in address(rng):
                out.write(f"{word}\t{shape(word)}\t{label}\n")
            out.write("\n")


def main() -> None:
    outdir = Path(sys.argv[1] if len(sys.argv) > 1 else "data")
    outdir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20261122)
    write(outdir / "address-train.txt", rng, 1500)
    write(outdir / "address-test.txt", rng, 500)


if __name__ == "__main__":
    main()
