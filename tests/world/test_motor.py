"""The Duckiebot's motor model against Duckietown's kinematics, written out here
from duckietown/dt-car-interface's kinematics_node.py (the reference: its formula,
not dmxshm's code)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dmxshm.world.motor import DUCKIEBOT, MotorModel
from dmxshm.world.robot import MAX_WHEEL_SPEED_RAD_S


def kinematics_node_duty(omega_l: float, omega_r: float, gain: float, trim: float,
                         k: float = 27.0, limit: float = 1.0) -> tuple[float, float]:
    """Duckietown's wheel speed -> duty: u_r = omega_r (gain + trim) / k, u_l =
    omega_l (gain - trim) / k, each clipped to +-limit."""
    u_r = omega_r * (gain + trim) / k
    u_l = omega_l * (gain - trim) / k
    return max(min(u_l, limit), -limit), max(min(u_r, limit), -limit)


def test_defaults_are_duckietowns_and_full_speed_is_the_engines_bound() -> None:
    assert (DUCKIEBOT.gain, DUCKIEBOT.trim, DUCKIEBOT.k, DUCKIEBOT.limit) == (1.0, 0.0, 27.0, 1.0)
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
    if np.abs(duty).max() < 1.0:
        np.testing.assert_allclose(m.wheel_speed(duty), [wl, wr], rtol=1e-12, atol=1e-12)


def test_a_duty_beyond_the_limit_is_full_speed_and_trim_turns_the_robot() -> None:
    assert DUCKIEBOT.wheel_speed(np.array([[2.0, -5.0]])).tolist() == [[27.0, -27.0]]
    left, right = MotorModel(trim=0.1).wheel_speed(np.array([0.5, 0.5])).tolist()
    assert right < left  # the right wheel's duty is worth less: the robot turns right
