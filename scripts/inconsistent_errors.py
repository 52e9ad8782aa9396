"""Count inconsistently mislabelled tokens in ``crfkit label -c`` output.

A token is *inconsistently mislabelled* when its prediction is wrong while
another token of the same word (exact string, first column) in the same
document is labelled right: the errors a skip-chain CRF is meant to remove.
Documents are separated by ``-DOCSTART-`` lines; in a file without them each
sentence is a document. The last two columns are gold and predicted.

    python scripts/inconsistent_errors.py ned-skip.out
    python scripts/inconsistent_errors.py --json ned-skip.out
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from crfkit.io.reader import DocStart, read_items


def count(path: str) -> dict:
    """Token count, errors and inconsistent errors of a labelled file."""
    docs: list[list[list[str]]] = [[]]
    marked = False
    for item in read_items(path):
        if isinstance(item, DocStart):
            marked = True
            docs.append([])
        else:
            docs[-1].extend(item.rows)
            if not marked:
                docs.append([])
    tokens = errors = inconsistent = 0
    for rows in docs:
        right: dict[str, int] = defaultdict(int)
        for row in rows:
            right[row[0]] += row[-2] == row[-1]
        for row in rows:
            tokens += 1
            if row[-2] != row[-1]:
                errors += 1
                inconsistent += right[row[0]] > 0
    return {"tokens": tokens, "errors": errors, "inconsistent_errors": inconsistent}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="outputs of crfkit label -c")
    parser.add_argument("--json", action="store_true", help="one JSON object per file")
    args = parser.parse_args()
    for path in args.files:
        result = count(path)
        if args.json:
            print(json.dumps({"file": path, **result}))
        else:
            print(f"{path}: {result['tokens']} tokens, {result['errors']} errors, "
                  f"{result['inconsistent_errors']} inconsistent (same word, same document, "
                  f"right elsewhere)")


if __name__ == "__main__":
    main()
