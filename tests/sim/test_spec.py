"""One description of a simulation, one set of defaults per front-end."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import gymnasium
import pytest

import dmxshm  # noqa: F401  (registers the envs)
from dmxshm.batch.env import DuckieLaneEnv
from dmxshm.batch.env_v1 import DuckieLaneV1Env
from dmxshm.batch.lanes import MultiLane
from dmxshm.duckietown import DuckietownEnv, Simulator
from dmxshm.network import NetworkConfig
from dmxshm.sim import spec as spec_module
from dmxshm.sim.spec import PRESETS, SimSpec, SimSpecError

# Each front-end's parameter for each SimSpec field it takes (v1 takes v0's camera,
# map, dt_s through its keyword arguments).
PARAMS: dict[str, tuple[Any, dict[str, str]]] = {
    "network": (NetworkConfig, {f: f for f in (
        "map", "robots", "dt_s", "substeps", "seed", "action", "motor_dynamics", "noise",
        "camera", "camera_model", "renderer", "randomize", "route")}),
    "v0": (DuckieLaneEnv.__init__, {"camera": "camera", "map": "map", "dt_s": "dt_s",
                                    "renderer": "renderer", "camera_model": "camera_model",
                                    "physics": "physics"}),
    "v1": (DuckieLaneV1Env.__init__, {f: f for f in (
        "map", "route", "noise", "motor_dynamics", "camera_model", "randomize",
        "renderer")}),
    "multi": (MultiLane.__init__, {f: f for f in (
        "robots", "camera", "map", "dt_s", "route", "noise", "motor_dynamics",
        "camera_model", "renderer", "randomize", "physics")}),
    "dropin": (Simulator.__init__, {"renderer": "renderer", "noise": "noise",
                                    "physics": "physics"}),
}


@pytest.mark.parametrize("preset", sorted(PARAMS))
def test_each_front_ends_signature_gives_its_presets_defaults(preset: str) -> None:
    where, params = PARAMS[preset]
    signature = inspect.signature(where)
    for field, param in params.items():
        assert signature.parameters[param].default == getattr(PRESETS[preset], field), \
            (preset, field)


def test_the_drop_ins_camera_and_frame_rate_are_its_presets() -> None:
    signature = inspect.signature(Simulator.__init__)
    size = (signature.parameters["camera_width"].default,
            signature.parameters["camera_height"].default)
    assert size == PRESETS["dropin"].camera
    assert 1.0 / signature.parameters["frame_rate"].default == PRESETS["dropin"].dt_s


def test_the_docs_table_is_the_presets() -> None:
    doc = spec_module.__doc__ or ""
    rows = [line.split() for line in doc.splitlines() if line.startswith("``")
            and line.split()[0].strip("`") in PRESETS]
    assert [r[0].strip("`") for r in rows] == list(PRESETS)
    for name, m, robots, action, motors, noise, route, camera, renderer, physics in rows:
        p = PRESETS[name.strip("`")]
        assert (m, int(robots), action, motors, noise, route, camera, renderer, physics) == (
            p.map, p.robots, p.action, "dynamics" if p.motor_dynamics else "ideal",
            "on" if p.noise else "off", p.route or "none", p.camera_model, p.renderer,
            p.physics)


def test_each_front_end_holds_the_spec_it_simulates() -> None:
    assert NetworkConfig().sim_spec == PRESETS["network"]
    assert NetworkConfig(map="grid", robots=3).sim_spec == PRESETS["network"].but(
        map="grid", robots=3)
    for version, preset in (("v0", "v0"), ("v1", "v1")):
        env = gymnasium.make(f"dmxshm/DuckieLane-{version}")
        try:
            assert env.unwrapped.sim_spec == PRESETS[preset]
        finally:
            env.close()
    env = gymnasium.make("dmxshm/DuckieLane-v1", map="loop", noise=False, route=None)
    try:
        assert env.unwrapped.sim_spec == PRESETS["v1"].but(map="loop", noise=False,
                                                           route=None)
    finally:
        env.close()
    world = MultiLane(2, map="loop")
    try:
        assert world.sim_spec == PRESETS["multi"].but(robots=2, map="loop")
    finally:
        world.close()
    dropin = DuckietownEnv(domain_rand=False)
    try:
        assert dropin.sim_spec == PRESETS["dropin"]
    finally:
        dropin.close()


@pytest.mark.parametrize(("field", "value"), [
    ("robots", 0), ("dt_s", float("nan")), ("substeps", 0), ("action", "volts"),
    ("camera_model", "fisheye"), ("renderer", "vulkan"), ("physics", "mujoco"),
    ("camera", (10, 0))])
def test_a_spec_that_cannot_be_is_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(SimSpecError, match=field):
        SimSpec(**{field: value})
    assert {f.name for f in dataclasses.fields(SimSpec)} >= {field}
