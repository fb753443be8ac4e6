"""dmxshm.parallel_env: a PettingZoo ParallelEnv of many robots in one world (PettingZoo's
own API and seed tests, collisions between robots and with objects, ended robots
leaving the agents, truncation, the global state, pickling, bad input refused)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

import dmxshm
from dmxshm.batch.lanes import MultiLane, MultiLaneError

pytestmark = pytest.mark.timeout(300)


def _factory(**kwargs):  # parallel_seed_test calls it twice
    return lambda: dmxshm.parallel_env(**kwargs)


@pytest.mark.parametrize("kwargs", [
    {"robots": 3, "map": "loop"},
    {"robots": 2, "map": "loop", "obs": "both", "camera": (32, 24), "renderer": "batch",
     "state": "top", "render_mode": "rgb_array"},
], ids=["state", "camera-top"])
def test_pettingzoo_api_and_seed_tests_pass(kwargs: dict) -> None:
    env = dmxshm.parallel_env(**kwargs)
    try:
        parallel_api_test(env, num_cycles=60)
    finally:
        env.close()
    parallel_seed_test(_factory(**kwargs))


def test_agents_spaces_state_and_render() -> None:
    env = dmxshm.parallel_env(robots=3, map="loop", render_mode="rgb_array")
    try:
        assert env.possible_agents == ["duckiebot0", "duckiebot1", "duckiebot2"]
        assert env.observation_space("duckiebot1") is env.observation_space("duckiebot1")
        assert env.action_space("duckiebot0").shape == (2,)
        obs, infos = env.reset(seed=3)
        assert env.agents == env.possible_agents
        assert all(env.observation_space(a).contains(o) for a, o in obs.items())
        state = env.state()
        assert state.shape == (3, 4) and state.dtype == np.float32
        assert (state[:, 3] == 1).all()
        # the poses of state() are where the robots are (they are apart)
        xy = state[:, :2].astype(np.float64)
        assert min(np.hypot(*(xy[i] - xy[j])) for i in range(3) for j in range(i)) > 0.2
        image = env.render()
        assert image.shape == (256, 256, 3) and image.dtype == np.uint8
        assert len(np.unique(image.reshape(-1, 3), axis=0)) > 3  # road, grass, markings
    finally:
        env.close()


def _head_on(end_on_collision: bool, penalty: float = 1.0) -> list[tuple]:
    """Two robots in one lane, facing each other 0.6 m apart, both driving forward."""
    env = dmxshm.parallel_env(robots=2, map="loop", noise=False, route=None,
                              collision_penalty=penalty, end_on_collision=end_on_collision,
                              max_episode_steps=60)
    try:
        env.reset(seed=0)
        x, y, yaw = (float(v) for v in env.state()[0][:3])
        d = 0.6
        poses = [(x, y, yaw), (x + d * math.cos(yaw), y + d * math.sin(yaw), yaw + math.pi)]
        env.reset(seed=0, options={"poses": poses})
        seen = []
        while env.agents:
            out = env.step({a: np.array([0.5, 0.5], np.float32) for a in env.agents})
            seen.append((*out, env.state().copy(), list(env.agents)))
        return seen
    finally:
        env.close()


def test_two_robots_driven_at_each_other_end_their_episodes_deterministically() -> None:
    first, again = _head_on(True), _head_on(True)
    assert len(first) == len(again) < 60
    obs, rewards, terms, truncs, infos, _state, agents = first[-1]
    assert terms == {"duckiebot0": True, "duckiebot1": True} and agents == []
    assert all(infos[a]["collided"] for a in terms)
    assert all(rewards[a] < -0.9 for a in terms)  # the penalty, less a little progress
    for a, b in zip(first, again, strict=True):  # every step the same, bit for bit
        assert a[1] == b[1] and a[2] == b[2] and np.array_equal(a[5], b[5])
        for agent in a[0]:
            assert np.array_equal(a[0][agent], b[0][agent])


def test_a_collision_without_ending_is_penalised_and_the_robots_go_on() -> None:
    seen = _head_on(False, penalty=3.0)
    hits = [(k, rewards) for k, (_o, rewards, _t, _tr, infos, _s, _a) in enumerate(seen)
            if any(i["collided"] for i in infos.values())]
    assert hits, "the robots never touched"
    k, rewards = hits[0]
    assert all(r < -2.9 for r in rewards.values())
    assert not any(seen[k][2].values())  # not terminated: they go on
    assert len(seen[k + 1][1]) == 2


def test_a_robot_that_drives_into_an_object_collides() -> None:
    env = dmxshm.parallel_env(robots=1, map="town", noise=False, route=None,
                              collision_penalty=5.0)
    try:
        sign = env.core.world.road_map.objects[0]  # a stop sign by the 4-way
        env.reset(seed=0, options={"poses": [(sign.x_m - 0.25, sign.y_m, 0.0)]})
        for _ in range(60):
            _, rewards, terms, _, infos = env.step({"duckiebot0": [0.4, 0.4]})
            if terms["duckiebot0"]:
                break
        assert infos["duckiebot0"]["collided"] and infos["duckiebot0"]["on_road"]
        assert rewards["duckiebot0"] < -4.9
    finally:
        env.close()


def test_an_ended_robot_leaves_the_agents_and_stays_stopped() -> None:
    env = dmxshm.parallel_env(robots=2, map="loop", noise=False, route=None)
    try:
        env.reset(seed=1)
        # robot 1 drives off the road (spinning hard), robot 0 follows its lane slowly
        for _ in range(200):
            actions = {a: ([0.2, 0.2] if a == "duckiebot0" else [1.0, -0.2])
                       for a in env.agents}
            _, _, terms, _, _ = env.step(actions)
            if "duckiebot1" not in env.agents:
                break
        assert terms.get("duckiebot1") and env.agents == ["duckiebot0"]
        assert env.state()[1][3] == 0
        for _ in range(15):  # its motors stop at once; a spinning body skids to rest
            env.step({"duckiebot0": [0.2, 0.2]})
        still = env.state()[1].copy()
        for _ in range(10):
            obs, rewards, terms, truncs, infos = env.step({"duckiebot0": [0.2, 0.2]})
            assert set(obs) == set(rewards) == set(terms) == {"duckiebot0"}
        # the ended robot did not move (it rests, an obstacle for the others)
        np.testing.assert_allclose(env.state()[1][:3], still[:3], atol=5e-3)
    finally:
        env.close()


def test_truncation_ends_every_robot_at_the_limit() -> None:
    env = dmxshm.parallel_env(robots=3, map="loop", max_episode_steps=4)
    try:
        env.reset(seed=0)
        for _ in range(4):
            _, _, terms, truncs, _ = env.step({a: [0.2, 0.2] for a in env.agents})
        assert all(truncs.values()) and not any(terms.values()) and env.agents == []
        with pytest.raises(MultiLaneError, match="reset"):
            env.step({})
    finally:
        env.close()


def test_picklable_before_its_first_reset_and_the_copy_runs_the_same() -> None:
    env = dmxshm.parallel_env(robots=2, map="loop", max_episode_steps=50)
    copy = pickle.loads(pickle.dumps(env))
    try:
        runs = []
        for e in (env, copy):
            obs, _ = e.reset(seed=5)
            for _ in range(5):
                obs, rewards, *_ = e.step({a: [0.3, 0.35] for a in e.agents})
            runs.append((obs, rewards))
        assert runs[0][1] == runs[1][1]
        assert all(np.array_equal(runs[0][0][a], runs[1][0][a]) for a in runs[0][0])
    finally:
        env.close()
        copy.close()


def test_bad_input_is_refused_before_a_world_is_made() -> None:
    with pytest.raises(MultiLaneError, match="at least|>= 1"):
        dmxshm.parallel_env(robots=0)
    with pytest.raises(MultiLaneError, match="holds 16 robots, not 17"):
        dmxshm.parallel_env(robots=17, map="loop")
    with pytest.raises(MultiLaneError, match="render_mode"):
        dmxshm.parallel_env(robots=2, render_mode="human")
    with pytest.raises(MultiLaneError, match="obs"):
        MultiLane(2, obs="lidar")
    env = dmxshm.parallel_env(robots=2, map="loop")
    try:
        env.reset(seed=0)
        with pytest.raises(MultiLaneError, match="unknown agent 'robot7'"):
            env.step({"robot7": [0, 0]})
        with pytest.raises(MultiLaneError, match="finite"):
            env.step({"duckiebot0": [np.nan, 0]})
        with pytest.raises(MultiLaneError, match="poses"):
            env.reset(options={"poses": [(0, 0, 0)]})
    finally:
        env.close()
