"""The Duckiebot's motor model against Duckietown's kinematics, written out here
from duckietown/dt-car-interface's kinematics_node.py (the reference: its formula,
not dmxshm's code)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmxshm.world.motor import DUCKIEBOT, MotorModel, Motors
from dmxshm.world.robot import BASELINE_M, MAX_WHEEL_SPEED_RAD_S


def kinematics_node_duty(omega_l: float, omega_r: float, gain: float, trim: float,
                         k: float = 27.0, limit: float = 1.0) -> tuple[float, float]:
    """Duckietown's wheel speed -> duty: u_r = omega_r (gain + trim) / k, u_l =
    omega_l (gain - trim) / k, each clipped to +-limit."""
    u_r = omega_r * (gain + trim) / k
    u_l = omega_l * (gain - trim) / k
    return max(min(u_l, limit), -limit), max(min(u_r, limit), -limit)


def test_defaults_are_duckietowns_and_full_speed_is_the_engines_bound() -> None:
    assert (DUCKIEBOT.gain, DUCKIEBOT.trim, DUCKIEBOT.k, DUCKIEBOT.limit) == (1.0, 0.0, 27.0, 1.0)
    assert (DUCKIEBOT.lag_s, DUCKIEBOT.dead_band) == (0.1, 0.05)  # dmxshm's estimates
    assert DUCKIEBOT.full_speed_rad_s == MAX_WHEEL_SPEED_RAD_S == 27.0
    assert DUCKIEBOT.wheel_speed(np.array([1.0, -1.0])).tolist() == [27.0, -27.0]


@given(st.floats(-30, 30), st.floats(-30, 30), st.floats(0.5, 1.5), st.floats(-0.2, 0.2))
def test_duty_is_duckietowns_kinematics_and_wheel_speed_its_inverse(
        wl: float, wr: float, gain: float, trim: float) -> None:
    m = MotorModel(gain=gain, trim=trim)
    duty = m.duty(np.array([wl, wr]))
    np.testing.assert_allclose(duty, kinematics_node_duty(wl, wr, gain, trim), rtol=1e-12,
                               atol=1e-15)
    # Within the limit, the motor gives back the speed the kinematics asked for.
    if np.abs(duty).max() < 1.0 and np.abs(duty).min() >= m.dead_band:
        np.testing.assert_allclose(m.wheel_speed(duty), [wl, wr], rtol=1e-12, atol=1e-12)


def test_a_duty_beyond_the_limit_is_full_speed_and_trim_turns_the_robot() -> None:
    assert DUCKIEBOT.wheel_speed(np.array([[2.0, -5.0]])).tolist() == [[27.0, -27.0]]
    left, right = MotorModel(trim=0.1).wheel_speed(np.array([0.5, 0.5])).tolist()
    assert right < left  # the right wheel's duty is worth less: the robot turns right


# -- dynamics: the lag and the dead band, in a world's physics ----------------------

def _drive(duty: tuple[float, float], seconds: float, model: MotorModel = DUCKIEBOT,
           dt_s: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """Hold ``duty`` on a robot on the loop map for ``seconds``; each step's measured
    wheel joint speeds (rad/s, from Bullet) and the robot's (x, y, yaw)."""
    import pybullet as pb

    from dmxshm.world.robot import WHEEL_JOINTS
    from dmxshm.world.world import World

    with World("loop", 1, seed=0, dt_s=dt_s, substeps=1) as world:
        motors = Motors(model, 1, dt_s)
        speeds, poses = [], []
        for _ in range(round(seconds / dt_s)):
            world.apply_wheel_speeds(motors.step(np.array([duty])))
            world.step()
            speeds.append([pb.getJointState(world.robot_ids[0], j,
                                            physicsClientId=world.client)[1]
                           for j in WHEEL_JOINTS])
            st = world.state()[0]
            x, y = st["pos_m"][:2]
            qx, qy, qz, qw = st["quat_xyzw"]
            poses.append([x, y, np.arctan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy**2 + qz**2))])
    return np.array(speeds), np.array(poses)


def test_steady_state_wheel_speed_at_pwm_half_is_the_models() -> None:
    speeds, _ = _drive((0.5, 0.5), 1.5)
    # Duckietown's kinematics' inverse: 0.5 * 27 / 1.0 rad/s, measured in Bullet's joints.
    np.testing.assert_allclose(speeds[-20:].mean(axis=0), [13.5, 13.5], rtol=0.02)


def test_the_lags_time_constant_shows_in_the_step_response() -> None:
    dt_s = 0.005
    speeds, _ = _drive((0.5, 0.5), 0.6, dt_s=dt_s)
    final = speeds[-10:, 0].mean()
    # A first-order lag reaches 1 - 1/e of its step at t = tau (0.1 s), 95% at 3 tau.
    t63 = (np.argmax(speeds[:, 0] >= (1 - np.exp(-1)) * final) + 1) * dt_s
    t95 = (np.argmax(speeds[:, 0] >= 0.95 * final) + 1) * dt_s
    assert t63 == pytest.approx(DUCKIEBOT.lag_s, rel=0.15)
    assert t95 == pytest.approx(3 * DUCKIEBOT.lag_s, rel=0.15)
    # Without the lag the wheel is at speed within a few steps (the torque's limit).
    ideal, _ = _drive((0.5, 0.5), 0.6, model=DUCKIEBOT.ideal(), dt_s=dt_s)
    assert (np.argmax(ideal[:, 0] >= 0.95 * final) + 1) * dt_s < DUCKIEBOT.lag_s


def test_a_duty_within_the_dead_band_does_not_move_the_robot() -> None:
    _, poses = _drive((0.04, 0.04), 1.0)
    assert np.hypot(*(poses[-1, :2] - poses[0, :2])) < 1e-3
    _, poses = _drive((0.06, 0.06), 1.0)
    assert np.hypot(*(poses[-1, :2] - poses[0, :2])) > 0.02


def test_trim_curves_the_path_as_predicted() -> None:
    model = MotorModel(trim=0.1)
    _, poses = _drive((0.5, 0.5), 2.0, model=model)
    # Predicted: wheel speeds u k / (gain -+ trim); a differential drive of baseline b
    # turns at r (w_r - w_l) / b while it goes r (w_l + w_r) / 2: curvature
    # 2 (w_r - w_l) / (b (w_l + w_r)). Measured: heading change over distance driven.
    w_l, w_r = 0.5 * 27 / 0.9, 0.5 * 27 / 1.1
    predicted = 2 * (w_r - w_l) / (BASELINE_M * (w_l + w_r))
    settled = poses[50:]  # after the lag (0.5 s)
    turned = np.unwrap(settled[:, 2])
    travelled = np.hypot(*np.diff(settled[:, :2], axis=0).T).sum()
    assert predicted < 0  # a positive trim veers right
    assert (turned[-1] - turned[0]) / travelled == pytest.approx(predicted, rel=0.1)


def test_motors_stop_puts_wheels_at_rest_and_ideal_follows_at_once() -> None:
    m = Motors(DUCKIEBOT, 2, 1 / 30)
    m.step(np.array([[1.0, 1.0], [1.0, 1.0]]))
    m.stop([1])
    assert m.speed[1].tolist() == [0.0, 0.0] and m.speed[0, 0] > 0
    ideal = Motors(DUCKIEBOT.ideal(), 1, 1 / 30)
    assert ideal.step(np.array([[0.5, -0.02]])).tolist() == [[13.5, -0.54]]


@given(st.lists(st.tuples(st.floats(-1.5, 1.5), st.floats(-1.5, 1.5)), min_size=1, max_size=40),
       st.floats(0.0, 0.3), st.floats(-0.2, 0.2), st.floats(0.0, 0.2))
def test_one_robots_float_path_is_the_array_path_bit_for_bit(
        duties: list[tuple[float, float]], lag_s: float, trim: float, band: float) -> None:
    model = MotorModel(trim=trim, lag_s=lag_s, dead_band=band)
    arrays, floats = Motors(model, 1, 1 / 30), Motors(model, 1, 1 / 30)
    for left, right in duties:
        assert arrays.step(np.array([[left, right]]))[0].tolist() == floats.step_one(left, right)


@given(st.lists(st.tuples(st.floats(-1.5, 1.5), st.floats(-1.5, 1.5)), min_size=1, max_size=20),
       st.lists(st.tuples(st.floats(0.0, 0.3), st.floats(-0.2, 0.2), st.floats(0.8, 1.2)),
                min_size=2, max_size=4))
def test_a_model_per_robot_drives_each_as_its_own_model_bit_for_bit(
        duties: list[tuple[float, float]], models: list[tuple[float, float, float]]) -> None:
    # A network's randomised robots: one Motors of several models, against one Motors
    # per model, the same duties for every robot.
    made = [MotorModel(lag_s=lag, trim=trim, gain=gain) for lag, trim, gain in models]
    many = Motors(made, len(made), 1 / 240)
    ones = [Motors(m, 1, 1 / 240) for m in made]
    for left, right in duties:
        got = many.step(np.array([[left, right]] * len(made)))
        for r, one in enumerate(ones):
            assert got[r].tolist() == one.step(np.array([[left, right]]))[0].tolist()


def test_a_model_per_robot_needs_one_for_each() -> None:
    with pytest.raises(ValueError, match="2 motor models for 3 robots"):
        Motors([DUCKIEBOT, DUCKIEBOT], 3, 0.1)
