"""The package's layering, checked from the source: the data path stays a path.

Every ``import`` of every module under ``crfkit/`` counts, including those
inside functions (deferred imports hide cycles, they do not remove them)
and those under ``TYPE_CHECKING``. The rules:

* no cycle between modules;
* ``crfkit/kernels/`` (everything Numba compiles, and its numpy twin)
  imports nothing from crfkit but ``config``, ``errors``, ``vectors``,
  ``space`` and itself;
* ``crfkit/optim/`` imports nothing from crfkit but ``config``, ``errors``,
  ``vectors`` and itself: an optimiser sees a function and a vector, never a
  model;
* ``crfkit/features/`` imports nothing but ``config``, ``errors``,
  ``reader`` and itself: extraction knows sequences and patterns only;
* no module imports another module's private (``_name``) names;
* outside ``crfkit/structures/`` no module branches on a structure (second order,
  skip chain) or imports a structure's own modules: the registry and the interface
  (``crfkit.structures``, ``crfkit.structures.base``) are the only seam, and the
  structures import nothing from the stages above them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "crfkit"

ALLOWED = {
    "crfkit.kernels": {"crfkit.config", "crfkit.errors", "crfkit.space", "crfkit.vectors"},
    "crfkit.optim": {"crfkit.config", "crfkit.errors", "crfkit.options", "crfkit.vectors"},
    "crfkit.features": {"crfkit.config", "crfkit.errors", "crfkit.io.reader"},
}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, name: str, modules: set[str]) -> list[tuple[str, list[str], int]]:
    """(imported crfkit module, names taken from it, line) for every import in the source.

    ``from crfkit.x import y`` counts as importing ``crfkit.x.y`` when that is
    a module, else as importing ``crfkit.x`` (names ``[y]``).
    """
    package = name if name in modules and _is_package(name, modules) else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("crfkit")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if not base.startswith("crfkit"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    found.append((sub, [], node.lineno))
                else:
                    found.append((base, [alias.name], node.lineno))
    return found


def _is_package(name: str, modules: set[str]) -> bool:
    return any(m.startswith(name + ".") for m in modules)


def import_graph(root: Path = PACKAGE) -> dict[str, list[tuple[str, list[str], int]]]:
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(files)
    return {name: [(m, names, line) for m, names, line in imports_of(p.read_text(), name, modules)
                   if m != name and m in modules]
            for name, p in files.items()}


def find_cycle(graph: dict[str, list[tuple[str, list[str], int]]]) -> list[str] | None:
    """One import cycle (as a list of modules, first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target, _, _ in graph.get(node, []):
            if target == "crfkit":  # the package's public API re-exports; it sits on top
                continue
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def violations(graph: dict[str, list[tuple[str, list[str], int]]]) -> list[str]:
    """Broken layering rules and private imports, one line each."""
    found = []
    for name, imports in sorted(graph.items()):
        layer = next((layer for layer in ALLOWED if name == layer or
                      name.startswith(layer + ".")), None)
        for target, names, line in imports:
            if layer and not (target == layer or target.startswith(layer + ".")
                              or target in ALLOWED[layer]):
                found.append(f"{name}:{line} imports {target} (outside what {layer} may use)")
            for taken in names:
                if taken.startswith("_") and not taken.startswith("__"):
                    found.append(f"{name}:{line} imports private {taken} from {target}")
    return found


def test_no_import_cycle():
    assert find_cycle(import_graph()) is None


def test_layers_and_private_names():
    assert violations(import_graph()) == []


# --- the checks themselves can fail --------------------------------------------------------------
def write_package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "crfkit"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_cycle_through_a_deferred_import_is_found(tmp_path):
    root = write_package(tmp_path, {
        "__init__.py": "",
        "a.py": "from crfkit.b import f\n",
        "b.py": "def f():\n    from crfkit import a\n",
    })
    assert find_cycle(import_graph(root)) in (["crfkit.a", "crfkit.b", "crfkit.a"],
                                              ["crfkit.b", "crfkit.a", "crfkit.b"])


@pytest.mark.parametrize("files, expected", [
    ({"kernels/k.py": "from crfkit.model import Model\n", "model.py": ""},
     "crfkit.kernels.k:1 imports crfkit.model (outside what crfkit.kernels may use)"),
    ({"optim/o.py": "from crfkit.kernels import lattice\n", "kernels/lattice.py": ""},
     "crfkit.optim.o:1 imports crfkit.kernels.lattice (outside what crfkit.optim may use)"),
    ({"label.py": "\n\nfrom crfkit.reader import _check\n", "reader.py": ""},
     "crfkit.label:3 imports private _check from crfkit.reader"),
    ({"features/x.py": "from ..train import y\n", "train.py": ""},
     "crfkit.features.x:1 imports crfkit.train (outside what crfkit.features may use)"),
])
def test_a_broken_rule_is_reported(tmp_path, files, expected):
    root = write_package(tmp_path, {"__init__.py": "", "kernels/__init__.py": "",
                                    "optim/__init__.py": "", "features/__init__.py": "", **files})
    assert violations(import_graph(root)) == [expected]


# outside crfkit/structures/, a structure is seen through the registry and base only
BANNED = re.compile(r"order *== *2|\.order\b|skip_edges|n_skip|skip_offset")
OPEN_STRUCTURE_MODULES = {"crfkit.structures", "crfkit.structures.base"}
ABOVE_STRUCTURES = ("crfkit.training", "crfkit.labelling", "crfkit.cli", "crfkit.evaluation",
                    "crfkit.dask", "crfkit.sklearn", "crfkit.model.model")

def structure_leaks(graph, root: Path = PACKAGE) -> list[str]:
    found = []
    for name, imports in sorted(graph.items()):
        inside = name == "crfkit.structures" or name.startswith("crfkit.structures.")
        for target, _, line in imports:
            if inside and target.startswith(ABOVE_STRUCTURES):
                found.append(f"{name}:{line} imports {target} (structures sit below it)")
            elif (not inside and target.startswith("crfkit.structures.")
                  and target not in OPEN_STRUCTURE_MODULES):
                found.append(f"{name}:{line} imports {target} (a structure's own module)")
    for path in sorted(root.rglob("*.py")):
        if "structures" in path.relative_to(root).parts:
            continue
        for no, text in enumerate(path.read_text().splitlines(), 1):
            if BANNED.search(text):
                found.append(f"{module_name(path, root)}:{no} branches on a structure")
    return found

def test_no_structure_branch_outside_structures():
    assert structure_leaks(import_graph()) == []

def test_a_structure_leak_is_reported(tmp_path):   # "shows it failing once"
    root = write_package(tmp_path, {"__init__.py": "", "structures/__init__.py": "",
                                    "structures/order2/__init__.py": "",
                                    "structures/order2/pair_space.py": "",
                                    "label.py": "from crfkit.structures.order2 import pair_space\n"
                                                "if space.order == 2:\n    pass\n"})
    assert structure_leaks(import_graph(root), root) == [
        "crfkit.label:1 imports crfkit.structures.order2.pair_space (a structure's own module)",
        "crfkit.label:2 branches on a structure"]


def test_no_kernel_can_depend_on_a_folder_its_cache_stamp_leaves_out():
    """crfkit.kernels.sourcestamp leaves crfkit/cli/ out of the kernels' stamp: nothing
    outside it may import it."""
    from crfkit.kernels.sourcestamp import LEFT_OUT

    for module, imports in import_graph().items():
        for folder in (f"crfkit.{name}" for name in LEFT_OUT):
            if module == folder or module.startswith(folder + "."):
                continue
            assert not [m for m, _, _ in imports if m == folder or m.startswith(folder + ".")], \
                f"{module} imports {folder}"
