"""dmxshm/DuckieLane-v1: v0 with routes through intersections and the turn observed,
PWM actions through the motor model, sensor noise and the lens camera; v0 keeps its
spaces."""

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
        # v1's actions are duties: Duckietown's kinematics, omega / 27 (gain 1, trim 0)
        left = (v - omega * BASELINE_M / 2) / WHEEL_RADIUS_M / 27.0
        right = (v + omega * BASELINE_M / 2) / WHEEL_RADIUS_M / 27.0
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


# -- PWM, noise, lens --------------------------------------------------------------

def _wheel_speeds(env: gymnasium.Env) -> list[float]:
    import pybullet as pb

    from dmxshm.world.robot import WHEEL_JOINTS

    w = env.unwrapped.world
    return [pb.getJointState(w.robot_ids[0], j, physicsClientId=w.client)[1]
            for j in WHEEL_JOINTS]


def test_without_noise_v1s_wheels_follow_the_motor_models_lag() -> None:
    from dmxshm.world.motor import DUCKIEBOT, Motors

    env = gymnasium.make("dmxshm/DuckieLane-v1", noise=False, route=None)
    env.reset(seed=0)
    model = Motors(DUCKIEBOT, 1, 1 / 30)
    duties = [0.5] * 20 + [0.2] * 20 + [0.03] * 20  # up, down, into the dead band
    for k, u in enumerate(duties):
        env.step(np.array([u, u], np.float32))
        want = model.step(np.array([[u, u]]))[0]
        if k % 20 >= 3:  # Bullet's wheels reach the model's speed within the torque limit
            np.testing.assert_allclose(_wheel_speeds(env), want, rtol=0.03, atol=0.1)
    assert abs(_wheel_speeds(env)[0]) < 0.1  # the dead band: at rest
    ideal = gymnasium.make("dmxshm/DuckieLane-v1", noise=False, route=None,
                           motor_dynamics=False)
    _, info = ideal.reset(seed=0)
    assert info["motor"]["lag_s"] == 0.0 and "noise" not in info
    ideal.step(np.array([0.5, 0.5], np.float32))
    ideal.step(np.array([0.5, 0.5], np.float32))
    np.testing.assert_allclose(_wheel_speeds(ideal), [13.5, 13.5], rtol=0.03)
    env.close()
    ideal.close()


def test_noise_is_seeded_by_reset_and_off_reads_exact() -> None:
    def at_rest(seed: int, **kw: object) -> np.ndarray:
        env = gymnasium.make("dmxshm/DuckieLane-v1", route=None, **kw)
        obs, info = env.reset(seed=seed)
        seen = [obs]
        for _ in range(40):
            seen.append(env.step(np.zeros(2, np.float32))[0])
        env.close()
        return np.array(seen)

    a, b, c, exact = at_rest(3), at_rest(3), at_rest(4), at_rest(3, noise=False)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    acc_z, gyro = STATE_FIELDS_V1.index("acc_z"), STATE_FIELDS_V1.index("gyro_x")
    # Exact sensors at rest: the same reading every step; noisy ones spread.
    assert np.ptp(exact[5:, acc_z]) < 1e-3 and np.ptp(a[5:, acc_z]) > 0.05
    assert np.ptp(a[5:, gyro]) > 1e-4
    # The lane's fields carry no noise: the same with or without.
    np.testing.assert_allclose(a[:, :2], exact[:, :2], atol=1e-6)


def test_v1_reads_no_target_as_the_drivers_8_m_and_uses_the_lens() -> None:
    env = gymnasium.make("dmxshm/DuckieLane-v1", obs="both", camera=(64, 48), route=None)
    obs, info = env.reset(seed=0)
    tof = STATE_FIELDS_V1.index("tof_m")
    assert obs["state"][tof] == 8.0  # nothing ahead at the start of grid's lanes
    cal = info["calibration"]  # the Duckiebot's lens, scaled to the image
    assert (cal["model"], cal["width"], cal["height"]) == ("plumb_bob", 64, 48)
    assert obs["camera"].shape == (48, 64, 3) and obs["camera"].dtype == np.uint8
    env.close()
    off = gymnasium.make("dmxshm/DuckieLane-v1", route=None, noise=False)
    obs, _ = off.reset(seed=0)
    assert obs[tof] == 8.0
    off.close()


def test_make_vec_v1_rows_are_the_single_envs() -> None:
    from dmxshm.batch.vector import make_vec

    vec = gymnasium.make_vec("dmxshm/DuckieLane-v1", 2, num_workers=0)  # in-process
    assert vec.unwrapped.version == "v1"
    singles = [gymnasium.make("dmxshm/DuckieLane-v1").unwrapped for _ in range(2)]
    obs, _ = vec.reset(seed=[10, 11])
    ref = [e.reset(seed=s)[0] for e, s in zip(singles, (10, 11), strict=True)]
    assert np.array_equal(obs, np.array(ref))
    rng = np.random.default_rng(0)
    for _ in range(30):
        act = rng.uniform(-1, 1, (2, 2)).astype(np.float32)
        obs, rew, *_ = vec.step(act)
        ref = [e.step(a) for e, a in zip(singles, act, strict=True)]
        assert np.array_equal(obs, np.array([r[0] for r in ref]))
        assert rew.tolist() == [r[1] for r in ref]
    vec.close()
    for e in singles:
        e.close()
    with pytest.raises(ValueError, match="version must be one of v0, v1, duckietown, simulator"):
        make_vec(1, version="v2")
