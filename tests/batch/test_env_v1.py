"""dmxshm/DuckieLane-v1: v0 with routes through intersections and the turn observed;
v0 keeps its spaces."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dmxshm  # noqa: F401  (registers the envs)
from dmxshm.batch.env_v1 import MORE_FIELDS, STATE_FIELDS_V1
from dmxshm.world.robot import BASELINE_M, WHEEL_RADIUS_M

pytestmark = pytest.mark.timeout(120)


def _drive(env: gymnasium.Env, steps: int, seed: int) -> tuple[list[np.ndarray], list, bool]:
    """A lane follower on v1's state: PD on offset and heading, the lane's curvature
    as feed-forward."""
    obs, info = env.reset(seed=seed)
    seen, turns, ended = [obs], [info["turn"]], False
    v = 0.22
    for _ in range(steps):
        offset, heading, curvature = obs[0], obs[1], obs[STATE_FIELDS_V1.index("curvature_1_m")]
        omega = -10.0 * offset - 4.0 * heading + v * curvature
        left = (v - omega * BASELINE_M / 2) / WHEEL_RADIUS_M / 25.0
        right = (v + omega * BASELINE_M / 2) / WHEEL_RADIUS_M / 25.0
        obs, _, terminated, truncated, info = env.step(np.array([left, right], np.float32))
        seen.append(obs)
        turns.append(info["turn"])
        if terminated or truncated:
            ended = terminated
            break
    return seen, turns, ended


def test_v1_adds_the_route_fields_and_v0_keeps_its_spaces() -> None:
    v0 = gymnasium.make("dmxshm/DuckieLane-v0")
    v1 = gymnasium.make("dmxshm/DuckieLane-v1")
    assert v0.observation_space.shape == (11,)
    assert v1.observation_space.shape == (11 + len(MORE_FIELDS),)
    assert v1.action_space == v0.action_space
    v0.close()
    v1.close()


def test_v1_passes_gymnasiums_checker() -> None:
    env = gymnasium.make("dmxshm/DuckieLane-v1").unwrapped
    check_env(env, skip_render_check=True)
    env.close()


def test_a_lane_follower_turns_through_intersections_and_stays_on_the_road() -> None:
    env = gymnasium.make("dmxshm/DuckieLane-v1")
    seen, turns, ended = _drive(env, 1000, seed=3)
    env.close()
    assert not ended and len(seen) == 1001  # the whole episode (1000 steps) on the road
    assert {"left", "right"} & set(turns)
    state = np.array(seen)
    known = state[:, STATE_FIELDS_V1.index("turn_known")] == 1
    assert known.any() and (~known).any()
    assert set(np.unique(state[known, STATE_FIELDS_V1.index("turn")])) <= {-1.0, 0.0, 1.0}


def test_the_same_seed_gives_the_same_turns() -> None:
    a = gymnasium.make("dmxshm/DuckieLane-v1")
    b = gymnasium.make("dmxshm/DuckieLane-v1")
    sa, ta, _ = _drive(a, 400, seed=5)
    sb, tb, _ = _drive(b, 400, seed=5)
    a.close()
    b.close()
    assert ta == tb and np.array_equal(np.array(sa), np.array(sb))


def test_routes_off_and_a_listed_route() -> None:
    env = gymnasium.make("dmxshm/DuckieLane-v1", route="right")
    _, turns, ended = _drive(env, 1000, seed=0)
    env.close()
    assert not ended and set(t for t in turns if t) <= {"right", "straight"}
    off = gymnasium.make("dmxshm/DuckieLane-v1", route=None)
    obs, info = off.reset(seed=0)
    assert info["turn"] is None and obs[STATE_FIELDS_V1.index("turn_known")] == 0
    off.close()
