"""Every import path that the README and docs/ showed users as of 937e6d4 keeps working,
whatever the package's layout becomes (the list was read from those files at that
commit, and is pinned here so that a later edit of the docs cannot shrink it)."""

from __future__ import annotations

import importlib

import pytest

MODULES = [
    "dmxshm", "dmxshm.batch.env", "dmxshm.batch.env_v1", "dmxshm.bench.agents",
    "dmxshm.bench.faults", "dmxshm.bench.sdk_agent", "dmxshm.cli", "dmxshm.client",
    "dmxshm.duckiematrix.bridge", "dmxshm.duckiematrix.layers", "dmxshm.duckietown",
    "dmxshm.duckietown.legacy", "dmxshm.errors", "dmxshm.logs", "dmxshm.marl.lanes",
    "dmxshm.matrix.batch_render", "dmxshm.matrix.cameras", "dmxshm.matrix.lens",
    "dmxshm.matrix.noise", "dmxshm.matrix.raycast", "dmxshm.network",
    "dmxshm.network.recording", "dmxshm.network.summary", "dmxshm.network.taps",
    "dmxshm.pngio", "dmxshm.policies", "dmxshm.proc", "dmxshm.proc.child",
    "dmxshm.profiling", "dmxshm.replay", "dmxshm.rllib", "dmxshm.sb3", "dmxshm.settings",
    "dmxshm.shm", "dmxshm.spine.run", "dmxshm.spine.simulation", "dmxshm.view.foxglove",
    "dmxshm.view.launch", "dmxshm.world.maps", "dmxshm.world.motor", "dmxshm.world.movers",
    "dmxshm.world.objects", "dmxshm.world.randomize", "dmxshm.world.scene",
    "dmxshm.world.world",
]
NAMES = {
    "dmxshm": ["DmxError", "connect", "connect_parallel", "make_vec", "parallel_env",
               "__version__"],
    "dmxshm.batch.env": ["STATE_FIELDS", "DuckieLaneEnv"],
    "dmxshm.bench.faults": ["inject", "ring_load"],
    "dmxshm.duckiematrix.layers": ["write_folder"],
    "dmxshm.duckietown": ["DuckietownEnv", "Simulator"],
    "dmxshm.duckietown.legacy": ["DuckietownEnv"],
    "dmxshm.logs": ["make_channel"],
    "dmxshm.matrix.lens": ["undistorter"],
    "dmxshm.network": ["Network", "NetworkConfig", "run"],
    "dmxshm.network.taps": ["Tap"],
    "dmxshm.policies": ["load_policy"],
    "dmxshm.proc.child": ["main"],
    "dmxshm.replay": ["replay"],
    "dmxshm.rllib": ["register", "register_multi_agent"],
    "dmxshm.sb3": ["make_vec_env"],
    "dmxshm.shm": ["Registry", "Ring"],
    "dmxshm.spine.run": ["run"],
    "dmxshm.world.maps": ["load_map"],
    "dmxshm.world.scene": ["tint"],
    "dmxshm.world.world": ["World"],
}


@pytest.mark.parametrize("module", MODULES)
def test_a_documented_import_path_still_imports(module: str) -> None:
    try:
        imported = importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or getattr(exc.__cause__, "name", None) or ""
        if missing and not missing.startswith("dmxshm"):  # an optional extra
            pytest.skip(f"{module} needs {missing}, not installed here")
        raise
    for name in NAMES.get(module, []):
        assert hasattr(imported, name), f"{module}.{name}"


@pytest.mark.parametrize(("old", "new"), [
    ("dmxshm.client", "dmxshm.network.client"),
    ("dmxshm.replay", "dmxshm.network.replay"),
    ("dmxshm.rllib", "dmxshm.frameworks.rllib"),
])
def test_a_moved_module_is_the_same_module_under_its_old_path(old: str, new: str) -> None:
    # The same object, not a copy: a monkeypatch or an isinstance through either path
    # sees the other's.
    assert importlib.import_module(old) is importlib.import_module(new)


def test_every_alias_module_is_left_out_of_doctest_collection() -> None:
    # Collected, an alias fails as "import file mismatch" (its module's file is another).
    from pathlib import Path

    import conftest
    root = Path(conftest.__file__).parent
    aliases = sorted(str(p.relative_to(root)) for p in (root / "dmxshm").rglob("*.py")
                     if "sys.modules[__name__] =" in p.read_text())
    assert aliases == sorted(conftest.ALIASES)
