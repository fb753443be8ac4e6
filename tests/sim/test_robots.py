"""One path from a randomisation draw to a robot's motors, noise and physics."""

from __future__ import annotations

from dataclasses import replace

import gymnasium
import pytest

import dmxshm  # noqa: F401  (registers the envs)
from dmxshm.batch.lanes import MultiLane
from dmxshm.matrix.noise import DUCKIEBOT as DUCKIEBOT_NOISE
from dmxshm.network import NetworkConfig
from dmxshm.sim.robots import robot_make, robot_makes
from dmxshm.world import randomize as rand
from dmxshm.world.motor import DUCKIEBOT

DRAW = {**rand.NOMINAL, "motor_gain": 0.9, "motor_trim": 0.05, "motor_lag_s": 0.2,
        "noise_scale": 1.5, "friction": 0.8, "mass": 1.1, "wheel_radius": 0.97}


def test_a_draw_changes_gain_trim_and_lag_and_keeps_the_rest_of_the_base_model() -> None:
    base = replace(DUCKIEBOT, k=20.0, limit=0.8, dead_band=0.1)
    make = robot_make(DRAW, base)
    assert make.motor == replace(base, gain=0.9, trim=0.05, lag_s=0.2)
    assert make.noise == DUCKIEBOT_NOISE.scaled(1.5)
    assert (make.friction, make.mass, make.wheel_radius, make.drawn) == (0.8, 1.1, 0.97, True)
    # A base without dynamics stays without lag.
    assert robot_make(DRAW, base.ideal()).motor.lag_s == 0.0
    nominal = robot_make(None, base)
    assert nominal.motor is base and nominal.noise is DUCKIEBOT_NOISE and not nominal.drawn


def test_draws_must_be_one_per_robot() -> None:
    assert len(robot_makes(None, 3, DUCKIEBOT)) == 3
    with pytest.raises(ValueError, match="2 draws for 3 robots"):
        robot_makes([DRAW, DRAW], 3, DUCKIEBOT)


def test_every_front_end_makes_its_robots_from_its_draws_alike() -> None:
    """The network, v1 and the multi-robot world each turn their own draws into motors
    and noise through robot_make."""
    cfg = NetworkConfig(robots=2, randomize=True, action="pwm", camera=(0, 0))
    assert cfg.robot_params is not None
    assert cfg.motor_models == [robot_make(p, cfg.motor).motor for p in cfg.robot_params]
    noise = cfg.sensor_noise()
    assert noise is not None
    assert noise.robot_models == [robot_make(p, cfg.motor).noise for p in cfg.robot_params]

    env = gymnasium.make("dmxshm/DuckieLane-v1", randomize=True)
    try:
        _, info = env.reset(seed=3)
        make = robot_make(info["randomization"], DUCKIEBOT)
        assert info["motor"] == make.motor.to_dict()
        assert info["noise"]["imu"] == make.noise.to_dict()["imu"]
    finally:
        env.close()

    world = MultiLane(2, map="loop", randomize=True)
    try:
        world.reset(seed=1)
        draws = world._params  # noqa: SLF001 - what the world drew
        assert draws
        expected = [robot_make(p, DUCKIEBOT).motor for p in draws]
        assert world._robots.motors is not None  # noqa: SLF001
        assert world._robots.motors.models == expected  # noqa: SLF001
    finally:
        world.close()
