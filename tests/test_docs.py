"""The manual runs: every block marked runnable in docs/ is executed, its output checked.

A shell block preceded by the line ``<!-- run -->`` (``<!-- run slow -->`` for one
that takes seconds) is run by bash; every ``python`` block is run by Python. The
blocks of one page share a working directory, in page order, so a tutorial's
later commands see the files its earlier ones wrote. That directory holds
``data/``, ``patterns/`` and ``scripts/`` of this checkout, and ``../shared``
is the shared corpora, so a block runs exactly as a reader types it in the
project's root. A block followed by ``<!-- output -->`` and a fenced block
must print that text on stdout; a line ``...`` there stands for any lines.
The comments are invisible on the rendered page.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# The checkout's root, wherever under tests/ this file sits (not tests.helpers: it loads Numba).
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
DOCS = ROOT / "docs"
SHARED = Path(os.environ.get("CRFKIT_SHARED", ROOT.parent / "shared"))
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
MARK = re.compile(r"<!--\s*(run(?: slow)?|output)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    code: str
    slow: bool
    expected: str | None

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def _mark_before(text: str, start: int) -> str | None:
    """The marker comment on the last non-blank line before offset ``start``, if any."""
    lines = text[:start].rstrip("\n").splitlines()
    found = MARK.search(lines[-1]) if lines else None
    return found.group(1) if found else None


def page_blocks(page: Path, root: Path = DOCS) -> list[Block]:
    """The runnable blocks of one page, each with the output it must print (if shown)."""
    text = page.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    blocks = []
    for i, fence in enumerate(fences):
        mark = _mark_before(text, fence.start())
        language = fence.group(1)
        if not (mark in ("run", "run slow") or language == "python"):
            continue
        following = fences[i + 1] if i + 1 < len(fences) else None
        expected = None
        if following is not None and _mark_before(text, following.start()) == "output":
            expected = following.group(2)
        blocks.append(Block(str(page.relative_to(root)), text.count("\n", 0, fence.start()) + 1,
                            language, fence.group(2), mark == "run slow", expected))
    return blocks


def all_blocks() -> list[Block]:
    return [block for page in sorted(DOCS.rglob("*.md")) for block in page_blocks(page)]


BLOCKS = all_blocks()


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is ``expected`` line by line, a ``...`` line matching any lines.

    Trailing blank lines do not count: a page cannot show them.
    """
    pattern = "".join(
        r"(?:.*\n)*?" if line.strip() == "..." else re.escape(line.rstrip()) + r"[ \t]*\n"
        for line in expected.splitlines())
    return re.fullmatch(pattern, actual.rstrip("\n") + "\n") is not None


def missing_modules(block: Block) -> list[str]:
    """The top-level modules a Python block imports that are not installed (optional extras)."""
    if block.language != "python":
        return []
    names = re.findall(r"^(?:from|import) (\w+)", block.code, re.M)
    return [name for name in names if importlib.util.find_spec(name) is None]


class PageRunner:
    """One working directory per page; runs its blocks in order, each at most once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.done: dict[str, dict[int, subprocess.CompletedProcess]] = {}

    def workdir(self, page: str) -> Path:
        work = self.root / page.replace("/", "_").removesuffix(".md") / "crfkit"
        if not work.exists():
            work.mkdir(parents=True)
            for name in ("data", "patterns", "scripts"):
                (work / name).symlink_to(ROOT / name)
            if SHARED.exists():
                (work.parent / "shared").symlink_to(SHARED.resolve())
        return work

    def run(self, block: Block) -> subprocess.CompletedProcess:
        done = self.done.setdefault(block.page, {})
        for earlier in (b for b in BLOCKS if b.page == block.page and b.line <= block.line):
            if earlier.line not in done:
                done[earlier.line] = self._execute(earlier)
        return done[block.line]

    def _execute(self, block: Block) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80")
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        command = ([sys.executable, "-c", block.code] if block.language == "python"
                   else ["bash", "-e", "-c", block.code])
        return subprocess.run(command, cwd=self.workdir(block.page), env=env, text=True,
                              capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> PageRunner:
    return PageRunner(tmp_path_factory.mktemp("docs"))


def _param(block: Block):
    marks = [pytest.mark.slow] if block.slow else []
    return pytest.param(block, id=block.name, marks=marks)


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_block_runs(block: Block, runner: PageRunner) -> None:
    page_so_far = [b for b in BLOCKS if b.page == block.page and b.line <= block.line]
    if any("../shared" in b.code for b in page_so_far) and not SHARED.exists():
        pytest.skip("the page's corpora come from ../shared, which is not beside this checkout")
    for module in missing_modules(block):
        pytest.skip(f"{block.name} imports {module}, which is not installed")
    done = runner.run(block)
    assert done.returncode == 0, f"{block.name} failed:\n{block.code}\n{done.stderr[-2000:]}"
    if block.expected is not None:
        assert matches(block.expected, done.stdout), (
            f"{block.name} printed\n{done.stdout}\ninstead of\n{block.expected}")


def test_enough_runnable_blocks() -> None:
    """The manual keeps at least 40 examples that run (a page rewrite cannot drop them all)."""
    assert len(BLOCKS) >= 40, len(BLOCKS)


def test_output_matching() -> None:
    assert matches("a\n...\nd\n", "a\nb\nc\nd\n")
    assert matches("a\n...\n", "a\n")
    assert not matches("a\nd\n", "a\nb\nd\n")
    assert not matches("a\n", "b\n")


def test_markers_found(tmp_path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- run -->\n```sh\necho hi\n```\n\n<!-- output -->\n```text\nhi\n```\n\n"
                    "```sh\nnot run\n```\n\n```python\nprint(1)\n```\n", encoding="utf-8")
    blocks = page_blocks(page, tmp_path)
    assert [(b.language, b.code, b.expected) for b in blocks] == [
        ("sh", "echo hi\n", "hi\n"), ("python", "print(1)\n", None)]


def test_readme_is_the_front_door() -> None:
    """Short, with the two commands CI runs, and no run dates or commit hashes."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert "pip install -e . && crfkit train -p patterns/address.pat" in readme
    assert "pip install -e '.[dev]' && python -m pytest -q" in readme
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), page
        assert not re.search(r"\b(session|issue) ?#?\d", text, re.I), page
