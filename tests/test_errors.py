"""Tests of dmxshm's errors: one root for every error of the package, semantic leaves.

The root rule is checked on the exception classes found by importing every
module of the package, not on a list written here, so an error class added
anywhere in dmxshm is checked without anyone remembering to list it.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable

import numpy as np
import pytest

import dmxshm
from dmxshm import errors
from dmxshm.matrix.camera import Camera
from dmxshm.matrix.obs import obs_dtype
from dmxshm.network.config import NetworkConfig
from dmxshm.sim import sensing
from dmxshm.sim.spec import SimSpec
from dmxshm.world.maps import load_map, parse_map
from dmxshm.world.objects import MapObject
from dmxshm.world.renderers import resolve as resolve_renderer
from dmxshm.world.routes import parse_route
from dmxshm.world.world import World

SKIPPED_MODULES = {
    "dmxshm.proc.__main__": "importing it runs a child process",
}

NEEDS_AN_EXTRA = {"dmxshm.sb3": "stable_baselines3",
                  "dmxshm.frameworks.sb3": "stable_baselines3"}
"""Modules that import an optional extra's package: checked where it is installed."""

OUTSIDE_THE_ROOT = {
    "dmxshm.proc.outcome.Terminated":
        "a SystemExit on purpose: SIGTERM unwinds a child through its finally blocks, "
        "and neither 'except Exception' nor 'except DmxError' may swallow it on the way",
}
"""Exception classes of dmxshm that are not DmxErrors, each with the reason."""

MIN_CLASSES_FOUND = 16
"""Fewer than this means the walk is broken (it found 24 when this was written)."""

BUILTIN_MEANINGS = {
    # Callers handle these with the built-in clause: a wait that ran out of
    # time, a name that is taken or gone, a ring that has ended.
    errors.DmxTimeoutError: TimeoutError,
    errors.RingTimeoutError: TimeoutError,
    errors.BarrierTimeoutError: TimeoutError,
    errors.SegmentExistsError: FileExistsError,
    errors.SegmentMissingError: FileNotFoundError,
    errors.ShmSpaceError: MemoryError,
    errors.LayoutError: ValueError,
    errors.RingClosedError: EOFError,
}
"""The built-in meanings of the leaves of dmxshm.errors."""

def _randomize_parse(config: object) -> object:
    from dmxshm.world.randomize import parse

    return parse(config)  # type: ignore[arg-type]


def _batch_too_big() -> object:
    from dmxshm.matrix.batch_render import BatchRenderer

    with World("loop", 1, renderer="batch") as world:
        states = world.state()
        return BatchRenderer.of_world(world).render(
            [Camera(4000, 3000)], states, 0.0, np.zeros((1, 3000, 4000, 3), np.uint8))


def _no_robots() -> object:
    from dmxshm.batch.lanes import MultiLane

    return MultiLane(robots=0)


def _bad_network_obs() -> object:
    from dmxshm.marl.network_env import connect_parallel

    return connect_parallel(obs="pixels")


def _dropin_resolve(name: str) -> object:
    from dmxshm.duckietown import resolve_map

    return resolve_map(name)


RAISED_BY: dict[str, Callable[[], object]] = {
    "dmxshm.network.config.ConfigError": lambda: NetworkConfig(robots=0),
    "dmxshm.matrix.camera.CameraError": lambda: Camera(width=0),
    "dmxshm.matrix.obs.ObsLayoutError": lambda: obs_dtype((-1, 2)),
    "dmxshm.sim.spec.SimSpecError": lambda: SimSpec(robots=0),
    "dmxshm.sim.sensing.SensorError": lambda: sensing.get("no-such-sensor"),
    "dmxshm.world.maperror.MapError": lambda: parse_map({"tiles": [["straight"]]}),
    "dmxshm.world.maperror.MapNotFoundError": lambda: load_map("no-such-map"),
    "dmxshm.world.objects.ObjectError": lambda: MapObject("a", "pylon", 0.0, 0.0),
    "dmxshm.world.routes.RouteError": lambda: parse_route("backwards"),
    "dmxshm.world.randomize.RandomizeError": lambda: _randomize_parse({"weather": {}}),
    "dmxshm.duckietown.surface.DropInError": lambda: _dropin_resolve("no-such-map"),
    "dmxshm.world.world.WorldError": lambda: World("loop", num_robots=-1),
    "dmxshm.world.renderers.RendererError": lambda: resolve_renderer("vulkan"),
    "dmxshm.matrix.batch_render.BatchRenderError": _batch_too_big,
    "dmxshm.batch.lanes.MultiLaneError": _no_robots,
    "dmxshm.marl.network_env.NetworkEnvError": _bad_network_obs,
}
"""A public call that raises each leaf defined outside dmxshm.errors that
declares a built-in base, so its built-in meaning is checked where callers see it."""

_GENERIC_BASES = {BaseException, Exception}


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _find_exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined at the top level of a module of dmxshm."""

    def fail(name: str) -> None:  # walk_packages skips a package that fails to import
        raise ImportError(f"cannot import {name}")

    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(dmxshm.__path__, "dmxshm.", onerror=fail):
        if info.name in SKIPPED_MODULES:
            continue
        extra = NEEDS_AN_EXTRA.get(info.name)
        if extra is not None and importlib.util.find_spec(extra) is None:
            continue  # an optional extra that is not installed here
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, BaseException)
                    and value.__module__ == module.__name__):
                found[_qualname(value)] = value
    return found


FOUND = _find_exception_classes()


def _declared_builtins(cls: type) -> list[type]:
    """The built-in exception categories ``cls`` names among its own bases."""
    return [b for b in cls.__bases__
            if b.__module__ == builtins.__name__ and b not in _GENERIC_BASES]


def test_the_walk_finds_the_errors_of_every_layer() -> None:
    assert len(FOUND) >= MIN_CLASSES_FOUND, sorted(FOUND)
    assert _qualname(errors.DmxError) in FOUND
    # The errors defined beside the code that raises them are found too.
    assert len({cls.__module__ for cls in FOUND.values()}) >= 5, sorted(FOUND)
    assert dmxshm.DmxError is errors.DmxError


def test_every_error_derives_from_the_root() -> None:
    strays = [name for name, cls in FOUND.items()
              if not issubclass(cls, errors.DmxError) and name not in OUTSIDE_THE_ROOT]
    assert not strays, (f"{strays} do not derive from dmxshm.errors.DmxError: derive them "
                        "from it (or from a leaf), or list them in OUTSIDE_THE_ROOT with why")


@pytest.mark.parametrize("name", sorted(OUTSIDE_THE_ROOT))
def test_every_exception_to_the_root_rule_is_still_needed(name: str) -> None:
    assert name in FOUND, f"{name} is gone: remove it from OUTSIDE_THE_ROOT"
    assert not issubclass(FOUND[name], errors.DmxError), \
        f"{name} is a DmxError now: remove it from OUTSIDE_THE_ROOT"


def test_terminated_escapes_except_exception() -> None:
    # The reason it is outside the root: a child's 'except Exception' must not stop it.
    terminated = FOUND["dmxshm.proc.outcome.Terminated"]
    assert issubclass(terminated, SystemExit) and not issubclass(terminated, Exception)


@pytest.mark.parametrize(("leaf", "builtin"), BUILTIN_MEANINGS.items(),
                         ids=lambda c: c.__name__)
def test_leaves_keep_builtin_meaning(leaf: type, builtin: type) -> None:
    assert issubclass(leaf, builtin) and issubclass(leaf, errors.DmxError)


def test_every_builtin_leaf_of_dmxshm_errors_has_its_meaning_checked() -> None:
    declaring = {cls for cls in FOUND.values()
                 if cls.__module__ == errors.__name__ and _declared_builtins(cls)}
    assert declaring <= set(BUILTIN_MEANINGS), \
        f"add {sorted(c.__name__ for c in declaring - set(BUILTIN_MEANINGS))} to BUILTIN_MEANINGS"


def test_every_builtin_leaf_outside_dmxshm_errors_has_a_call_that_raises_it() -> None:
    declaring = {name for name, cls in FOUND.items()
                 if cls.__module__ != errors.__name__ and _declared_builtins(cls)
                 and name not in OUTSIDE_THE_ROOT}
    assert declaring == set(RAISED_BY), \
        f"RAISED_BY is missing {sorted(declaring - set(RAISED_BY))}, " \
        f"or lists classes that declare no built-in base: {sorted(set(RAISED_BY) - declaring)}"


@pytest.mark.parametrize("name", sorted(RAISED_BY))
def test_a_leaf_is_caught_by_each_builtin_it_declares(name: str) -> None:
    leaf = FOUND[name]
    # The categories it declares and those it inherits (MapNotFoundError
    # declares FileNotFoundError and is a ValueError through MapError).
    meanings = {b for cls in leaf.__mro__ if cls.__module__.startswith("dmxshm.")
                for b in _declared_builtins(cls)}
    assert meanings
    for builtin in sorted(meanings, key=lambda b: b.__name__):
        with pytest.raises(builtin) as info:
            RAISED_BY[name]()
        assert type(info.value) is leaf, f"{name}'s call raised {type(info.value)}"
        assert isinstance(info.value, errors.DmxError)
        assert str(info.value) and str(info.value) == info.value.args[0]


def test_shm_leaves() -> None:
    for leaf in (errors.SegmentExistsError, errors.SegmentMissingError,
                 errors.ShmSpaceError, errors.LayoutError):
        assert issubclass(leaf, errors.ShmError)


def test_attributes() -> None:
    err = errors.PeerDiedError("gone", role="renderer-1", pid=42)
    assert (str(err), err.role, err.pid) == ("gone", "renderer-1", 42)
    space = errors.ShmSpaceError("full", size_bytes=10, free_bytes=3)
    assert (space.size_bytes, space.free_bytes) == (10, 3)
    with pytest.raises(TypeError):
        errors.PeerDiedError("gone")  # type: ignore[call-arg]  # who died is not optional
