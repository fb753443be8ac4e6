"""The package's layers stay honest: no import cycle, and shm/ imports nothing above it.

Read from the source with ``ast`` (no import runs): every ``import dmxshm.x``
and ``from dmxshm.x import y`` of every module, at any depth (imports inside
functions count too: they are how cycles hide).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dmxshm

ROOT = Path(dmxshm.__file__).parent
LEAVES = {"dmxshm.errors", "dmxshm.settings"}
"""Root modules every layer may use: they import nothing of dmxshm."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The dmxshm modules ``path`` imports (a ``from pkg import name`` of a submodule
    counts as importing that submodule)."""
    found: set[str] = set()
    this = module_name(path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("dmxshm"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            if not base.startswith("dmxshm"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m in known and m != this}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(path, set(mods)) for name, path in mods.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the list of modules around it, or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_is_read() -> None:
    mods = modules()
    assert {"dmxshm.shm.ring", "dmxshm.proc.supervisor", "dmxshm.network.engine"} <= set(mods)
    assert "dmxshm.shm.ring" in imports_of(mods["dmxshm.shm.barrier"], set(mods)) or \
        "dmxshm.shm.waiting" in imports_of(mods["dmxshm.shm.barrier"], set(mods))


def test_a_cycle_would_be_found() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle(graph: dict[str, set[str]]) -> None:
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_shm_imports_nothing_above_it(graph: dict[str, set[str]]) -> None:
    bad = {f"{m} imports {dep}" for m, deps in graph.items() if m.startswith("dmxshm.shm")
           for dep in deps if not dep.startswith("dmxshm.shm") and dep not in LEAVES}
    assert not bad, sorted(bad)


def test_the_leaves_import_nothing_of_dmxshm(graph: dict[str, set[str]]) -> None:
    for leaf in LEAVES:
        assert graph[leaf] == set(), f"{leaf} imports {graph[leaf]}"


@pytest.mark.parametrize("layer, below", [
    ("dmxshm.proc", ("dmxshm.shm", "dmxshm.proc")),
    ("dmxshm.world", ("dmxshm.world", "dmxshm._pybullet")),
    ("dmxshm.matrix", ("dmxshm.matrix", "dmxshm.world", "dmxshm._pybullet", "dmxshm.pngio")),
])
def test_lower_layers_import_only_what_is_below(graph: dict[str, set[str]], layer: str,
                                               below: tuple[str, ...]) -> None:
    bad = {f"{m} imports {dep}" for m, deps in graph.items() if m.startswith(layer)
           for dep in deps if not dep.startswith(below) and dep not in LEAVES}
    assert not bad, sorted(bad)
