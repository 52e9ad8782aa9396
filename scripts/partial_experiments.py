"""Run the partial-label experiments of the manual (docs/guides/partial-labels.md) end to
end and print their table: each training file is made by scripts/partial_labels.py
(seeded), trained with ``crfkit train`` (defaults, the named pattern file), labelled with
``crfkit label -c`` on the test file and scored with ``crfkit eval --format json``.

CoNLL-2000 (``patterns/chunking.pat``, scored on test.txt: overall F1 and NP F1): full
labels; 50% of the labels hidden (``?``) and the naive alternative (``O``); only NP
chunks labelled, with ``?``, the complement set, or ``O`` elsewhere. CoNLL-2002 Dutch
(``patterns/ner-nl.pat``, ned.train, scored on ned.testb): full labels; dictionary
supervision with ``?`` elsewhere, with ``O`` for lower-case unmatched tokens, and the
same with ``O`` also for capitalised common words, and the naive ``O`` everywhere
unmatched.

    python scripts/partial_experiments.py --workdir /tmp/partial
    python scripts/partial_experiments.py --only full,hide50-naive,np-naive,ned-full
    python scripts/partial_experiments.py --no-partial   # the runs any crfkit can do

Results are kept in WORKDIR/results.json; an experiment already there is not run again
(``--rerun`` runs it anyway), so the partial runs can be added to the baselines later.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CRFKIT_SHARED") or ROOT.parent / "shared") / "data"


@dataclass(frozen=True)
class Experiment:
    """One training run: how its training file is made, and what it is scored on."""

    name: str
    corpus: str  # "conll2000" or "ned"
    make: tuple[str, ...]  # scripts/partial_labels.py arguments before IN OUT; () = as is
    partial: bool  # the training file holds partial labels
    what: str


HIDE = ("hide", "--fraction", "0.5", "--seed", "1")
DICT = ("dictionary",)
EXPERIMENTS = (
    Experiment("full", "conll2000", (), False, "full labels"),
    Experiment("hide50", "conll2000", HIDE, True, "50% of the labels ?"),
    Experiment("hide50-naive", "conll2000", (*HIDE, "--naive"), False, "50% of the labels O"),
    Experiment("np", "conll2000", ("keep-type", "--type", "NP"), True,
               "NP labels only, ? elsewhere"),
    Experiment("np-complement", "conll2000", ("keep-type", "--type", "NP", "--complement"),
               True, "NP labels only, the other labels' set elsewhere"),
    Experiment("np-naive", "conll2000", ("keep-type", "--type", "NP", "--naive"), False,
               "NP labels only, O elsewhere"),
    Experiment("ned-full", "ned", (), False, "full labels"),
    Experiment("ned-dict", "ned", DICT, True, "dictionary matches, ? elsewhere"),
    Experiment("ned-dict-lower", "ned", (*DICT, "--outside-lowercase"), True,
               "dictionary matches, O for lower-case, ? elsewhere"),
    Experiment("ned-dict-common", "ned", (*DICT, "--outside-common"), True,
               "dictionary matches, O for lower-case and common words, ? elsewhere"),
    Experiment("ned-dict-naive", "ned", (*DICT, "--naive"), False,
               "dictionary matches, O elsewhere"),
)

CORPORA = {
    "conll2000": (SHARED / "conll2000" / "train.txt", SHARED / "conll2000" / "test.txt",
                  ROOT / "patterns" / "chunking.pat"),
    "ned": (SHARED / "conll2002" / "ned.train", SHARED / "conll2002" / "ned.testb",
            ROOT / "patterns" / "ner-nl.pat"),
}


def run(command: list[str], log: Path) -> None:
    """Run a command, its output appended to ``log``; stop the runner if it fails."""
    with open(log, "a", encoding="utf-8") as out:
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}; see {log}")


def run_experiment(e: Experiment, work: Path, crfkit: list[str], threads: str,
                   options: list[str]) -> dict:
    """Make the training file, train (``-t threads``, ``options``), label the test file,
    score; the scores and times."""
    train, test, patterns = CORPORA[e.corpus]
    log = work / f"{e.name}.log"
    log.unlink(missing_ok=True)
    data = train
    if e.make:
        data = work / f"{e.name}.train"
        run([sys.executable, str(ROOT / "scripts" / "partial_labels.py"), *e.make,
             str(train), str(data)], log)
    model, labelled = work / f"{e.name}.model", work / f"{e.name}.out"
    train_cmd = [*crfkit, "train", "-t", threads, *options, "-p", str(patterns), str(data),
                 str(model)]
    start = time.perf_counter()
    run(train_cmd, log)
    seconds = time.perf_counter() - start
    run([*crfkit, "label", "-c", "-m", str(model), str(test), str(labelled)], log)
    scored = subprocess.run([*crfkit, "eval", "--format", "json", str(labelled)],
                            capture_output=True, text=True, check=True)
    report = json.loads(scored.stdout)
    types = report["types"]
    return {"name": e.name, "corpus": e.corpus, "what": e.what, "seconds": seconds,
            "train": " ".join(train_cmd), "make": " ".join(e.make),
            "options": " ".join(options),
            "f1": report["overall"]["f1"], "accuracy": report["accuracy"],
            "np_f1": types.get("NP", {}).get("f1")}


def table(results: dict[str, dict]) -> str:
    """The results as a Markdown table, in the experiments' order."""
    rows = ["| corpus | training labels | script arguments | train options | train (s) | "
            "test F1 | NP F1 |", "|---|---|---|---|---|---|---|"]
    for e in EXPERIMENTS:
        r = results.get(e.name)
        if r is None:
            continue
        np_f1 = "" if r["np_f1"] is None else f"{r['np_f1']:.2f}"
        make = f"`{r['make']}`" if r["make"] else ""
        options = f"`{r['options']}`" if r.get("options") else ""
        rows.append(f"| {r['corpus']} | {r['what']} | {make} | {options} | {r['seconds']:.0f} | "
                    f"{r['f1']:.2f} | {np_f1} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default="partial-experiments", type=Path)
    parser.add_argument("--only", default="", help="comma-separated experiment names")
    parser.add_argument("--no-partial", action="store_true",
                        help="only the runs whose training file has no partial labels")
    parser.add_argument("--rerun", action="store_true", help="run done experiments again")
    parser.add_argument("--threads", default="1", help="crfkit train -t (default 1)")
    parser.add_argument("--partial-args", default="--latent 1",
                        help="train options of the runs on partial labels (default: "
                             "'--latent 1', the structure that sums over label sets)")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - {e.name for e in EXPERIMENTS}
    if unknown:
        parser.error(f"unknown experiments: {', '.join(sorted(unknown))}")
    args.workdir.mkdir(parents=True, exist_ok=True)
    store = args.workdir / "results.json"
    results = json.loads(store.read_text()) if store.exists() else {}
    crfkit = [sys.executable, "-m", "crfkit.cli"]
    for e in EXPERIMENTS:
        if (names and e.name not in names) or (args.no_partial and e.partial):
            continue
        if e.name in results and not args.rerun:
            continue
        print(f"running {e.name}...", file=sys.stderr, flush=True)
        extra = args.partial_args.split() if e.partial else []
        results[e.name] = run_experiment(e, args.workdir, crfkit, args.threads, extra)
        store.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
