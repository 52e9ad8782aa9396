"""Check that converted Wapiti models label as Wapiti does, token for token.

For each pattern file (Wapiti's own ``dat/chpattern.txt`` from its source
archive, plus two small files exercising ``%M``, ``x*`` and ``x?``), train
Wapiti on the first sentences of CoNLL-2000, label the test set with
``wapiti label``, convert the model with ``crfkit convert``, label with
``crfkit label`` and count the tokens whose labels differ (the bar: 0).

Needs the shared folder (``../shared`` or ``$CRFKIT_SHARED``) and builds
Wapiti with ``peers/build.sh``. Usage::

    python scripts/wapiti_regex_check.py [--workdir DIR] [--sentences 1500] [--iterations 30]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
from pathlib import Path

PATTERN_FILES = {
    "upper-match.txt": """*

U:w=%x[0,0]
U:p=%x[0,1]
*:M1=%M[0,0,"^.?.?"]
*:M2=%M[-1,0,"\\u\\l*"]
*:M3=%M[1,0,".\\l?$"]
U:M4=%M[0,0,"\\u\\a*"]/%x[0,1]
*:T1=%T[0,0,"^\\u"]
""",
    "star-optional.txt": """*

U:w=%x[0,0]
U:p=%x[0,1]
*:s1=%m[0,0,"^.*"]
*:s2=%m[0,0,"\\d?"]
*:s3=%m[0,0,"\\d?\\d"]
*:s4=%m[-1,0,"\\a*-"]
*:s5=%t[1,0,"^\\u?\\l*$"]
*:s6=%m[0,0,"\\d*\\.\\d?"]
*:s7=%m[0,0,"^.*$"]
*:s8=%m[1,0,"\\l*\\d?\\l"]
*:s9=%t[-2,0,"\\d"]
""",
}


def shared_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    return Path(os.environ.get("CRFKIT_SHARED", here.parent / "shared"))


def build_wapiti(shared: Path) -> str:
    out = subprocess.run(["bash", str(shared / "peers" / "build.sh")], check=True,
                         capture_output=True, text=True).stdout
    return next(line.split("=", 1)[1] for line in out.splitlines()
                if line.startswith("wapiti="))


def first_sentences(source: Path, target: Path, count: int) -> None:
    kept, blanks = [], 0
    with open(source, encoding="utf-8") as handle:
        for line in handle:
            kept.append(line)
            if not line.strip():
                blanks += 1
                if blanks >= count:
                    break
    target.write_text("".join(kept), encoding="utf-8")


def predicted(path: Path) -> list[str]:
    """The last column of every non-blank line."""
    with open(path, encoding="utf-8") as handle:
        return [line.split()[-1] for line in handle if line.strip()]


def check(wapiti: str, patterns: Path, train: Path, test: Path, work: Path,
          iterations: int) -> int:
    """Differing tokens between Wapiti's labels and the converted model's."""
    stem = work / patterns.stem
    model = stem.with_suffix(".wapiti")
    if not model.exists():
        subprocess.run([wapiti, "train", "-p", str(patterns), "-i", str(iterations),
                        str(train), str(model)], check=True, capture_output=True)
    subprocess.run([wapiti, "label", "-m", str(model), str(test), f"{stem}.wlab"],
                   check=True, capture_output=True)
    crfkit = [sys.executable, "-c", "from crfkit.cli import main; main()"]
    subprocess.run([*crfkit, "convert", "-q", str(model), f"{stem}.crfkit"], check=True)
    subprocess.run([*crfkit, "label", "-m", f"{stem}.crfkit", str(test), f"{stem}.clab"],
                   check=True)
    theirs, ours = predicted(Path(f"{stem}.wlab")), predicted(Path(f"{stem}.clab"))
    if len(theirs) != len(ours):
        raise SystemExit(f"{patterns.name}: {len(theirs)} tokens from Wapiti, {len(ours)} "
                         "from crfkit")
    return sum(a != b for a, b in zip(theirs, ours, strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", default="wapiti-regex-check")
    parser.add_argument("--sentences", type=int, default=1500)
    parser.add_argument("--iterations", type=int, default=30)
    args = parser.parse_args()
    shared = shared_dir()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    wapiti = build_wapiti(shared)
    with tarfile.open(shared / "peers" / "wapiti-1.5.0.tar.gz") as archive:
        member = archive.extractfile("wapiti-1.5.0/dat/chpattern.txt")
        (work / "chpattern.txt").write_bytes(member.read())
    for name, text in PATTERN_FILES.items():
        (work / name).write_text(text, encoding="utf-8")
    train, test = work / "train.txt", shared / "data" / "conll2000" / "test.txt"
    first_sentences(shared / "data" / "conll2000" / "train.txt", train, args.sentences)
    failed = 0
    for name in ("chpattern.txt", *PATTERN_FILES):
        differing = check(wapiti, work / name, train, test, work, args.iterations)
        print(f"{name}: {differing} differing tokens")
        failed += differing > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
