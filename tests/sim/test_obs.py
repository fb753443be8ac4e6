"""One robot in one state gives one observation vector, whichever front-end drives it:
the network's sensing (and ``connect_parallel``, which reads the network's records),
``DuckieLane-v1`` and ``parallel_env``'s world."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest

import dmxshm
from dmxshm.batch.lanes import MultiLane
from dmxshm.matrix.sensors import TimeOfFlight
from dmxshm.network import Network, NetworkConfig
from dmxshm.sim.obs import STATE_FIELDS, STATE_FIELDS_V1, state_v1
from dmxshm.sim.sensing import SENSOR_NAMES, Sensing, obs_dtype
from dmxshm.world.routes import Routes, parse_route
from dmxshm.world.world import World

pytestmark = pytest.mark.timeout(60)


def _driven_state(route: str | None, seed: int) -> np.ndarray:
    """A robot's state after a few steps of v1 (moving, turning, accelerating)."""
    env = gymnasium.make("dmxshm/DuckieLane-v1", map="grid", noise=False, route=route)
    try:
        env.reset(seed=seed)
        for _ in range(12):
            env.step(np.array([0.6, 0.45], np.float32))
        return env.unwrapped.world.state().copy()
    finally:
        env.close()


def _v1(states: np.ndarray, route: str | None) -> np.ndarray:
    env = gymnasium.make("dmxshm/DuckieLane-v1", map="grid", noise=False, route=route)
    try:
        v1 = env.unwrapped
        v1.reset(seed=0)
        v1.world.set_state(states)
        obs, _, _ = v1._measure(v1.world.state(copy=False))  # noqa: SLF001
        return np.asarray(obs)
    finally:
        env.close()


def _network(states: np.ndarray, route: str | None) -> np.ndarray:
    world = World("grid", 1, seed=0)
    try:
        world.set_state(states)
        turns = parse_route(route)
        routes = Routes.of(world.road_map, 1, 0, turns) if turns is not None else None
        sensing = Sensing(world, noise=None, cameras=None, routes=routes)
        records = np.zeros(1, obs_dtype(None, route=routes is not None))
        sensing.fill(records, (0,), states, 0, 0.0, due=list(SENSOR_NAMES))
        return state_v1(records, TimeOfFlight().max_range_m)[0]
    finally:
        world.close()


def _parallel(states: np.ndarray, route: str | None) -> np.ndarray:
    world = MultiLane(1, map="grid", noise=False, route=route)
    try:
        world.reset(seed=0)
        world.world.set_state(states)
        obs, _, _ = world._measure([0])  # noqa: SLF001
        return np.asarray(obs)[0]
    finally:
        world.close()


@pytest.mark.parametrize("seed", [0, 5])
def test_one_state_one_observation_in_every_front_end(seed: int) -> None:
    states = _driven_state(None, seed)
    v1 = _v1(states, None)
    network = _network(states, None)
    parallel = _parallel(states, None)
    assert v1.shape == (len(STATE_FIELDS_V1),)
    assert abs(v1[STATE_FIELDS_V1.index("speed_m_s")]) > 0.05  # it moves
    np.testing.assert_array_equal(network, v1)
    np.testing.assert_array_equal(parallel, v1)
    # v0's vector is v1's first fields
    assert STATE_FIELDS_V1[:len(STATE_FIELDS)] == STATE_FIELDS


def test_connect_parallel_observes_the_vectors_of_its_records() -> None:
    """connect_parallel's observation of a robot is state_v1 of the record its slot got
    (the conversion the test above checks against v1's)."""
    cfg = NetworkConfig(mode="gym", robots=2, agents=0, external_agents=1, steps=10_000,
                        camera=(0, 0), episodes=True, noise=False, name="obs-one-vector",
                        wait_timeout_s=20.0, connect_timeout_s=20.0)
    with Network(cfg):
        env: Any = dmxshm.connect_parallel("obs-one-vector", timeout_s=20)
        try:
            obs, _ = env.reset()
            for _ in range(5):
                obs, *_ = env.step({a: np.array([10.0, 9.0]) for a in env.agents})
            (records,) = env._records  # noqa: SLF001
            expected = state_v1(records, TimeOfFlight().max_range_m)
            for i, agent in enumerate(env.possible_agents):
                np.testing.assert_array_equal(obs[agent], expected[i])
                assert env.observation_space(agent).contains(obs[agent])
            assert expected[:, STATE_FIELDS_V1.index("speed_m_s")].max() > 0.05
        finally:
            env.close()
