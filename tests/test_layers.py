"""The package's layers stay honest: no import cycle, between modules or between
folders; shm/ imports nothing above it; every child process starts in proc/.

Read from the source with ``ast`` (no import runs): every ``import dmxshm.x``
and ``from dmxshm.x import y`` of every module, at any depth (imports inside
functions count too: they are how cycles hide), and every call that starts a
process.
"""

from __future__ import annotations

import ast
import re
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
    ("dmxshm.policies", ("dmxshm.policies", "dmxshm.world")),
    ("dmxshm.world", ("dmxshm.world", "dmxshm._pybullet")),
    ("dmxshm.matrix", ("dmxshm.matrix", "dmxshm.world", "dmxshm._pybullet", "dmxshm.pngio")),
    ("dmxshm.sim", ("dmxshm.sim", "dmxshm.matrix", "dmxshm.world", "dmxshm._pybullet",
                    "dmxshm.pngio")),
])
def test_lower_layers_import_only_what_is_below(graph: dict[str, set[str]], layer: str,
                                               below: tuple[str, ...]) -> None:
    bad = {f"{m} imports {dep}" for m, deps in graph.items() if m.startswith(layer)
           for dep in deps if not dep.startswith(below) and dep not in LEAVES}
    assert not bad, sorted(bad)


# -- folders -------------------------------------------------------------------------

def folder_of(module: str) -> str:
    """The folder (subpackage) a module is in, or the top-level module itself:
    ``dmxshm.spine.run`` -> ``dmxshm.spine``; ``dmxshm.cli`` -> ``dmxshm.cli``."""
    return ".".join(module.split(".")[:2])


def folder_graph(graph: dict[str, set[str]]) -> dict[str, dict[str, set[str]]]:
    """Folder -> the folders it imports -> the module imports that make that edge."""
    folders: dict[str, dict[str, set[str]]] = {folder_of(m): {} for m in graph}
    for module, deps in graph.items():
        for dep in deps:
            a, b = folder_of(module), folder_of(dep)
            if a != b:
                folders[a].setdefault(b, set()).add(f"{module} imports {dep}")
    return folders


def test_folders_are_read() -> None:
    assert folder_of("dmxshm.spine.run") == folder_of("dmxshm.spine") == "dmxshm.spine"
    assert folder_of("dmxshm.cli") == "dmxshm.cli" and folder_of("dmxshm") == "dmxshm"
    edges = folder_graph({"dmxshm.a.x": {"dmxshm.a.y", "dmxshm.b.z"}, "dmxshm.a.y": set(),
                          "dmxshm.b.z": set()})
    assert edges == {"dmxshm.a": {"dmxshm.b": {"dmxshm.a.x imports dmxshm.b.z"}},
                     "dmxshm.b": {}}


def test_no_import_cycle_between_folders(graph: dict[str, set[str]]) -> None:
    # A cycle of folders is a layer that is both above and below another, even
    # when no module cycle exists (the spine and the network once shared the
    # agents' policies that way: spine/agent.py imported network/policies.py).
    folders = folder_graph(graph)
    cycle = find_cycle({f: set(deps) for f, deps in folders.items()})
    why = [f"{a} -> {b} ({'; '.join(sorted(folders[a][b]))})"
           for a, b in zip(cycle or [], (cycle or [])[1:], strict=False)]
    assert cycle is None, "folder import cycle:\n" + "\n".join(why)


# -- loads by string ------------------------------------------------------------------

ENTRY_POINT = re.compile(r"(dmxshm(?:\.\w+)*):\w+(?:\.\w+)*")
"""A string that names a dmxshm object to load, ``"dmxshm.x.y:Name"`` (an entry point,
as gymnasium registers envs)."""


def string_loads(source: str, known: set[str]) -> set[tuple[str, int]]:
    """The dmxshm modules ``source`` loads by string: ``(module, line)`` of every
    ``"dmxshm.x.y:Name"`` string and of every ``import_module`` call (``importlib``'s,
    however it is reached) whose first argument is a literal dmxshm module name."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                (match := ENTRY_POINT.fullmatch(node.value)):
            found.add((match.group(1), node.lineno))
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and \
                isinstance(node.args[0].value, str) and \
                node.args[0].value.startswith("dmxshm") and \
                (getattr(node.func, "attr", None) == "import_module"
                 or getattr(node.func, "id", None) == "import_module"):
            found.add((node.args[0].value, node.lineno))
    return {(m, line) for m, line in found if m in known}


STRING_LOADS_ALLOWED: dict[tuple[str, str], str] = {}
"""Loads by string that cross a layer upward today, and why each is still there: each
is a cycle of folders the import graph does not show."""


@pytest.fixture(scope="module")
def loads() -> dict[str, set[tuple[str, int]]]:
    """Every module's loads by string (``module -> {(loaded module, line)}``)."""
    mods = modules()
    return {name: found for name, path in mods.items()
            if (found := string_loads(path.read_text(), set(mods)))}


def test_loads_by_string_are_found() -> None:
    source = """
import importlib
from importlib import import_module as load
KINDS = {"a": "dmxshm.batch.env:DuckieLaneEnv", "b": "not dmxshm.x:Y", "c": "dmxshm.shm"}
importlib.import_module("dmxshm.marl.lanes")
import_module("dmxshm.spine")
importlib.import_module("gymnasium")
"""
    known = {"dmxshm.batch.env", "dmxshm.marl.lanes", "dmxshm.spine", "dmxshm.shm"}
    assert string_loads(source, known) == {("dmxshm.batch.env", 4),
                                           ("dmxshm.marl.lanes", 5), ("dmxshm.spine", 6)}


def test_no_load_by_string_crosses_a_layer(graph: dict[str, set[str]],
                                           loads: dict[str, set[tuple[str, int]]]) -> None:
    # A load by string is an import the import graph does not see: with every one
    # counted as an import, the folders must still have no cycle.
    bad = []
    for module, found in sorted(loads.items()):
        for target, line in sorted(found):
            if (module, target) in STRING_LOADS_ALLOWED:
                continue
            with_it = {m: set(deps) for m, deps in graph.items()}
            with_it[module].add(target)
            folders = folder_graph(with_it)
            if find_cycle({f: set(deps) for f, deps in folders.items()}):
                bad.append(f"{module}:{line} loads {target} by string")
    assert not bad, ("a load by string that crosses a layer upward (a folder cycle the "
                     "imports hide): pass the object in from above, or register it from "
                     "above at import:\n" + "\n".join(bad))


def test_every_string_load_allowance_is_still_needed(
        loads: dict[str, set[tuple[str, int]]]) -> None:
    present = {(m, target) for m, found in loads.items() for target, _ in found}
    stale = sorted(set(STRING_LOADS_ALLOWED) - present)
    assert not stale, f"{stale} are no longer loaded by string: delete them from " \
                      "STRING_LOADS_ALLOWED"


# -- process starts ------------------------------------------------------------------

PROCESS_STARTS = {
    "subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput",
                   "getstatusoutput"},
    "os": {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "spawnl",
           "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe"},
    "multiprocessing": {"Process", "Pool"},
    "concurrent.futures": {"ProcessPoolExecutor"},
    "pty": {"fork", "spawn"},
}
"""Calls that start a process, by the module that defines them."""

STARTS_ALLOWED = {
    "dmxshm.world.renderers": "its EGL probe is a throw-away interpreter run to its end for "
                              "its output, never a process of a run; and world/ sits below "
                              "proc/ (it imports only world/ and _pybullet)",
    "dmxshm.bench.ipc": "the IPC benchmark measures multiprocessing's Pipe and Queue beside "
                        "the rings: its children are multiprocessing's own, by design",
    "dmxshm.bench.faults": "fault injection starts whole dmxshm commands (the CLI under test) "
                           "in sessions of their own to kill their processes from outside; "
                           "its ring-load writer shares multiprocessing Events",
}
"""Modules outside proc/ that may start processes themselves, and why."""


def process_starts(source: str) -> set[tuple[str, int]]:
    """The calls in ``source`` that start a process: ``(qualified name, line)``.

    Follows what the imports bind (``import subprocess as sp``, ``from os import
    fork``), and multiprocessing contexts (``ctx = mp.get_context(...)``;
    ``ctx.Process(...)`` is ``multiprocessing.Process``), at any depth.
    """
    tree = ast.parse(source)
    names: dict[str, str] = {}  # a local name -> the dotted name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    top = a.name.partition(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"

    def dotted(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return names.get(expr.id)
        if isinstance(expr, ast.Attribute):
            base = dotted(expr.value)
            return f"{base}.{expr.attr}" if base else None
        if isinstance(expr, ast.Call) and dotted(expr.func) == "multiprocessing.get_context":
            return "multiprocessing"  # a context starts processes as the module does
        return None

    for node in ast.walk(tree):  # contexts bound to a name
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                dotted(node.value) == "multiprocessing":
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = "multiprocessing"
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (name := dotted(node.func)):
            module, _, fn = name.rpartition(".")
            if fn in PROCESS_STARTS.get(module, ()):
                found.add((name, node.lineno))
    return found


@pytest.fixture(scope="module")
def starts() -> dict[str, set[tuple[str, int]]]:
    """Every module outside proc/ that starts a process, with those calls."""
    found = {}
    for name, path in modules().items():
        if name == "dmxshm.proc" or name.startswith("dmxshm.proc."):
            continue
        if calls := process_starts(path.read_text()):
            found[name] = calls
    return found


def test_process_starts_are_found() -> None:
    source = """
import os
import subprocess as sp
from multiprocessing import get_context
from os import fork as f

def go():
    import multiprocessing as mp
    sp.Popen(["x"])
    f()
    ctx = get_context("spawn")
    ctx.Process(target=go)
    mp.get_context("fork").Process(target=go).start()
    os.posix_spawn("x", [], {})
    psutil.Process(1)          # looks at a process, starts none
    sp.TimeoutExpired          # not a call
"""
    assert process_starts(source) == {("subprocess.Popen", 9), ("os.fork", 10),
                                      ("multiprocessing.Process", 12),
                                      ("multiprocessing.Process", 13),
                                      ("os.posix_spawn", 14)}


def test_every_child_process_is_started_through_proc(
        starts: dict[str, set[tuple[str, int]]]) -> None:
    bad = [f"{m}:{line} calls {call}" for m, calls in starts.items() if m not in STARTS_ALLOWED
           for call, line in sorted(calls)]
    assert not bad, ("start child processes with dmxshm.proc (Supervisor.start for a "
                     "function, proc.program.start for a python -m program), or add the "
                     "module to STARTS_ALLOWED with the reason:\n" + "\n".join(bad))


def test_every_allowance_is_still_needed(starts: dict[str, set[tuple[str, int]]]) -> None:
    stale = sorted(set(STARTS_ALLOWED) - set(starts))
    assert not stale, f"{stale} no longer start processes themselves: delete them from " \
                      "STARTS_ALLOWED"
