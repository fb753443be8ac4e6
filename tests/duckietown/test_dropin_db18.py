"""The drop-in moves its robot as gym-duckietown does: Duckietown's DB18 model with its
0.15 s delay, integrated once a frame, from the duties ``Simulator.step`` is given."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dmxshm.duckietown import DuckietownEnv, Simulator
from dmxshm.sim.planar import PlanarWorld
from dmxshm.world.world import World

pwm = pytest.importorskip("dt_modeling.dynamics.pwm_dynamics",
                          reason="lib-dt-modeling is not installed (pip install "
                                 "lib-dt-modeling; the README's test command installs it)")


def lib_poses(start: tuple[float, float, float], duties: np.ndarray, dt: float,
              delay_s: float, trim: float = 0.0) -> np.ndarray:
    x, y, yaw = start
    q0 = np.array([[math.cos(yaw), -math.sin(yaw), x], [math.sin(yaw), math.cos(yaw), y],
                   [0.0, 0.0, 1.0]])
    factory = (pwm.get_DB18_uncalibrated(delay_s, trim) if trim
               else pwm.get_DB18_nominal(delay_s))
    state = factory.initialize(c0=(q0, np.zeros((3, 3))), t0=0)
    out = []
    for left, right in duties.tolist():
        state = state.integrate(dt, pwm.PWMCommands(motor_left=left, motor_right=right))
        q = state.state.q0
        out.append((q[0, 2], q[1, 2], math.atan2(q[1, 0], q[0, 0])))
    return np.array(out)


@pytest.mark.parametrize("frame_rate", [30, 20])
def test_the_simulators_poses_are_lib_dt_modelings(frame_rate: int) -> None:
    env = Simulator(map_name="loop", camera_width=16, camera_height=12, domain_rand=False,
                    frame_rate=frame_rate, max_steps=10_000)
    try:
        env.reset(seed=2)
        start = tuple(env.world.start_poses[0])
        rng = np.random.default_rng(frame_rate)
        duties = rng.uniform(0.0, 0.4, (60, 2))
        got = []
        for d in duties:
            env.step(d)
            got.append(env._pose())
        want = lib_poses(start, duties, 1.0 / frame_rate, 0.15)
        assert np.abs(np.array(got) - want).max() < 1e-9
    finally:
        env.close()


def test_dynamics_rand_draws_the_uncalibrated_models_trim() -> None:
    env = Simulator(map_name="loop", camera_width=16, camera_height=12, domain_rand=False,
                    dynamics_rand=True)
    try:
        _, info = env.reset(seed=5)
        trim = info["randomization"]["motor_trim"]
        assert trim != 0.0
        model = env.world.model.params[0]
        assert (model.delay_s, model.w_alpha_r, model.u_alpha_r) == (
            0.15, 15 * (1 + trim), 1.5)
    finally:
        env.close()


def test_bullet_stays_selectable_and_db18_is_the_default() -> None:
    db18 = DuckietownEnv(camera_width=16, camera_height=12, domain_rand=False)
    bullet = DuckietownEnv(camera_width=16, camera_height=12, domain_rand=False,
                           physics="bullet")
    try:
        assert isinstance(db18.world, PlanarWorld) and isinstance(bullet.world, World)
        assert (db18.wheel_dist, bullet.wheel_dist) == (0.102, 0.11)
    finally:
        db18.close()
        bullet.close()
