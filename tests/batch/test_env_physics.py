"""DuckieLane under either physics: ``physics="db18"`` moves the robot by Duckietown's
DB18 model (:mod:`dmxshm.sim.planar`), Bullet stays the default."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import dmxshm  # noqa: F401  (registers the envs)
from dmxshm.sim.obs import STATE_FIELDS_V1
from dmxshm.sim.planar import PlanarWorld
from dmxshm.sim.spec import PRESETS
from dmxshm.world import randomize as rand
from dmxshm.world.world import World

SPEED = STATE_FIELDS_V1.index("speed_m_s")


@pytest.mark.parametrize("version", ["v0", "v1"])
def test_physics_is_chosen_at_make(version: str) -> None:
    default = gymnasium.make(f"dmxshm/DuckieLane-{version}")
    db18 = gymnasium.make(f"dmxshm/DuckieLane-{version}", physics="db18")
    try:
        assert isinstance(default.unwrapped.world, World)
        assert isinstance(db18.unwrapped.world, PlanarWorld)
        assert db18.unwrapped.sim_spec == PRESETS[version].but(physics="db18")
    finally:
        default.close()
        db18.close()


def test_an_unknown_physics_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="bullet, db18.*'ode'"):
        gymnasium.make("dmxshm/DuckieLane-v1", physics="ode")


def test_full_duty_is_the_db18s_speed() -> None:
    """The DB18 at full duty: 2 x 1.5 / 5 = 0.6 m/s (Bullet's robot: 0.86)."""
    env = gymnasium.make("dmxshm/DuckieLane-v1", physics="db18", noise=False, map="loop",
                         route=None)
    try:
        env.reset(seed=1)
        for _ in range(60):  # 2 s: ten of the model's time constants
            obs, *_ = env.step(np.ones(2, np.float32))
        assert obs[SPEED] == pytest.approx(0.6, abs=1e-4)
        assert env.unwrapped.reset(seed=1)[1]["motor"]["u1"] == 5.0
    finally:
        env.close()


def test_db18_episodes_repeat_with_the_seed() -> None:
    runs = []
    for _ in range(2):
        env = gymnasium.make("dmxshm/DuckieLane-v1", physics="db18", randomize=True)
        try:
            obs, _ = env.reset(seed=3)
            rows = [obs]
            rng = np.random.default_rng(0)
            for _ in range(50):
                obs, reward, *_ = env.step(rng.uniform(-1, 1, 2).astype(np.float32))
                rows.append(obs)
            runs.append(np.array(rows))
        finally:
            env.close()
    assert np.array_equal(runs[0], runs[1])
    assert runs[0][:, SPEED].std() > 0.0


def test_a_db18_collision_is_counted_once_and_seen_by_the_episode() -> None:
    from dmxshm.batch.lanes import MultiLane

    world = MultiLane(2, map="loop", physics="db18", noise=False, route=None,
                      end_on_collision=False)
    try:
        world.reset(seed=0)
        x, y, yaw = world.poses()[0]
        ahead = (x + 0.4 * np.cos(yaw), y + 0.4 * np.sin(yaw), yaw + np.pi)
        world.reset(seed=0, poses=[(x, y, yaw), ahead])
        begun = np.zeros(2, int)
        for _ in range(60):
            _, _, terminated, _, infos = world.step(np.full((2, 2), 0.5))
            begun += [info["collided"] for info in infos]
        assert begun.tolist() == [1, 1]          # one contact, counted once, each robot
        assert world.world.contacts() == [(0, 1)]  # and still touching
        gap = np.hypot(*(world.poses()[0, :2] - world.poses()[1, :2]))
        assert gap > 0.1                          # not through each other
    finally:
        world.close()
    ends = MultiLane(2, map="loop", physics="db18", noise=False, route=None)
    try:
        ends.reset(seed=0, poses=[(x, y, yaw), ahead])
        for _ in range(60):
            _, _, terminated, _, _ = ends.step(np.full((2, 2), 0.5))
            if terminated.any():
                break
        assert terminated.tolist() == [True, True]  # the env's rule: a collision ends it
    finally:
        ends.close()


def test_parallel_env_takes_physics() -> None:
    env = dmxshm.parallel_env(robots=2, physics="db18")
    try:
        obs, _ = env.reset(seed=0)
        assert len(obs) == 2
        assert isinstance(env.core.world, PlanarWorld)
    finally:
        env.close()


def test_db18_randomises_the_models_own_parameters() -> None:
    infos = {}
    for physics in ("bullet", "db18"):
        env = gymnasium.make("dmxshm/DuckieLane-v1", physics=physics, randomize=True)
        try:
            infos[physics] = env.reset(seed=11)[1]
        finally:
            env.close()
    drawn, bullet = infos["db18"]["randomization"], infos["bullet"]["randomization"]
    # Bullet draws none of them; DB18 draws them after the rest, which keep their values.
    assert not any(k.startswith("model_") for k in bullet)
    assert {k: v for k, v in drawn.items() if not k.startswith("model_")} == bullet
    lo, hi = rand.MODEL["model"]["model_u1_scale"]
    assert lo <= drawn["model_u1_scale"] <= hi and drawn["model_u1_scale"] != 1.0
    motor = infos["db18"]["motor"]
    assert motor["u1"] == 5.0 * drawn["model_u1_scale"]
    assert motor["w1"] == 4.0 * drawn["model_w1_scale"]
    assert motor["delay_s"] == drawn["model_delay_s"] > 0.0
    gain, trim = drawn["motor_gain"], drawn["motor_trim"]
    assert motor["w_alpha_r"] == 15.0 * gain * (1.0 + trim)


def test_a_config_may_name_the_models_parameters_alone() -> None:
    config = {"model": {"model_w1_scale": [2.0, 2.0]}}
    env = gymnasium.make("dmxshm/DuckieLane-v1", physics="db18", randomize=config)
    try:
        info = env.reset(seed=0)[1]
    finally:
        env.close()
    assert info["motor"]["w1"] == 8.0 and info["motor"]["u1"] == 5.0
    with pytest.raises(rand.RandomizeError, match="model_w1_scale"):
        rand.parse({"model": {"w1": [1, 2]}})
