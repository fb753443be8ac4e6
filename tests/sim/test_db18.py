"""The DB18 model over arrays of robots equals lib-dt-modeling's own integration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmxshm.sim.db18 import DB18, WHEEL_DISTANCE_M, WHEEL_RADIUS_M, DB18Params

pwm = pytest.importorskip("dt_modeling.dynamics.pwm_dynamics",
                          reason="lib-dt-modeling is not installed (pip install "
                                 "lib-dt-modeling; the README's test command installs it)")

TOLERANCE = 1e-9


def reference(trim: float, delay_s: float, pose: tuple[float, float, float], dt: float,
              duties: np.ndarray) -> list[tuple[float, ...]]:
    """lib-dt-modeling's robot after each step: (x, y, yaw, u, w, axis_l, axis_r)."""
    factory = pwm.get_DB18_uncalibrated(delay_s, trim)
    x, y, yaw = pose
    q0 = np.array([[math.cos(yaw), -math.sin(yaw), x], [math.sin(yaw), math.cos(yaw), y],
                   [0.0, 0.0, 1.0]])
    state = factory.initialize(c0=(q0, np.zeros((3, 3))), t0=0)
    out = []
    for left, right in duties.tolist():
        state = state.integrate(dt, pwm.PWMCommands(motor_left=left, motor_right=right))
        model = state.state if delay_s > 0 else state
        q, v = model.q0, model.v0
        out.append((q[0, 2], q[1, 2], math.atan2(q[1, 0], q[0, 0]), v[0, 2], v[1, 0],
                    model.axis_left_rad, model.axis_right_rad))
    return out


def ours(trims: list[float], delays: list[float], poses: list[tuple[float, float, float]],
         dt: float, duties: np.ndarray) -> np.ndarray:
    """Our robots (all at once) after each step, shape (steps, robots, 7)."""
    model = DB18([DB18Params.uncalibrated(d, t) for t, d in zip(trims, delays, strict=True)],
                 poses)
    out = []
    for k in range(duties.shape[1]):
        model.step(dt, duties[:, k])
        out.append(np.stack([model.x, model.y, model.yaw, model.u, model.w, model.axis_l,
                             model.axis_r], axis=1))
    return np.array(out)


def close(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = np.abs(a - b)
    d[..., 2] = np.abs((a[..., 2] - b[..., 2] + np.pi) % (2 * np.pi) - np.pi)
    return d


@settings(max_examples=15, deadline=None)
@given(robots=st.integers(1, 4), steps=st.integers(1, 120), seed=st.integers(0, 2**31),
       dt=st.sampled_from([1 / 30, 0.05, 0.01]),
       delay_steps=st.lists(st.sampled_from([0.0, 1.5, 2.5, 4.5, 6.0]), min_size=4,
                            max_size=4),
       trims=st.lists(st.floats(-0.3, 0.3), min_size=4, max_size=4))
def test_equal_to_lib_dt_modeling(robots: int, steps: int, seed: int, dt: float,
                                  delay_steps: list[float], trims: list[float]) -> None:
    # (Delays in steps: lib-dt-modeling fails with an IndexError when t - delay falls
    # after the last command, a delay of at most one step; ours applies that command.)
    rng = np.random.default_rng(seed)
    # Duties a bit past [-1, 1] so that the clip is exercised too.
    duties = rng.uniform(-1.2, 1.2, (robots, steps, 2))
    poses = [tuple(p) for p in rng.uniform([-2, -2, -math.pi], [2, 2, math.pi], (robots, 3))]
    delays = [d * dt for d in delay_steps[:robots]]
    got = ours(trims[:robots], delays, poses, dt, duties)
    for r in range(robots):
        want = np.array(reference(trims[r], delays[r], poses[r], dt, duties[r]))
        assert close(got[:, r], want).max() <= TOLERANCE, (r, delays[r], trims[r])


def test_ten_thousand_steps_with_delay_and_trim() -> None:
    """The issue's figure: 10,000 random-PWM steps (gym-duckietown's 0.15 s delay at 30 Hz,
    where t - delay falls half-way between two commands) stay within 1e-9."""
    rng = np.random.default_rng(7)
    steps, dt = 10_000, 1 / 30
    duties = rng.uniform(-1, 1, (2, steps, 2))
    poses = [(0.5, 0.2, 0.3), (-1.0, 2.0, -2.0)]
    got = ours([0.1, -0.05], [0.15, 0.0], poses, dt, duties)
    for r, (trim, delay) in enumerate([(0.1, 0.15), (-0.05, 0.0)]):
        want = np.array(reference(trim, delay, poses[r], dt, duties[r]))
        assert close(got[:, r], want).max() <= TOLERANCE


def test_delay_holds_the_first_commands_back() -> None:
    model = DB18([DB18Params.nominal(delay_s=0.1), DB18Params.nominal()])
    model.step(0.05, np.ones((2, 2)))
    assert model.u[0] == 0.0 and model.u[1] > 0.0
    model.step(0.05, np.zeros((2, 2)))
    model.step(0.05, np.zeros((2, 2)))  # t - delay = 0.05: the second command (zero)...
    assert model.u[0] > 0.0              # ...but the first (full duty) reached it before


def test_wheel_angles_follow_the_kinematics() -> None:
    model = DB18([DB18Params.uncalibrated(trim=0.2)])
    angles = np.zeros(2)
    for _ in range(50):
        model.step(0.02, np.array([[0.8, 0.3]]))
        half = 0.5 * WHEEL_DISTANCE_M * model.w[0]
        angles += np.array([model.u[0] - half, model.u[0] + half]) / WHEEL_RADIUS_M * 0.02
    assert np.allclose([model.axis_l[0], model.axis_r[0]], angles, atol=1e-12)


def test_place_resets_a_row_only() -> None:
    model = DB18([DB18Params.nominal(0.1)] * 2)
    for _ in range(10):
        model.step(0.05, np.ones((2, 2)))
    model.place([0], [(1.0, 2.0, math.pi / 2)])
    assert (model.x[0], model.y[0], model.u[0], model.axis_l[0]) == (1.0, 2.0, 0.0, 0.0)
    assert model.u[1] > 0.5
    model.step(0.05, np.ones((2, 2)))
    assert model.u[0] == 0.0  # its delay starts afresh: nothing given 0.1 s ago


def test_set_params_gives_a_row_its_new_model() -> None:
    model = DB18([DB18Params.nominal()] * 2)
    model.set_params([1], [DB18Params.nominal().scaled(gain=0.5)])
    model.step(0.05, np.ones((2, 2)))
    assert model.u[1] == pytest.approx(model.u[0] / 2)
    model.set_params([0], [DB18Params.nominal(delay_s=0.2)])
    model.step(0.05, np.ones((2, 2)))
    assert model.du[0] < 0.0  # its delay gives it no push yet: it slows down
    assert model.du[1] > 0.0


def test_scaled_trim_is_the_uncalibrated_models() -> None:
    assert DB18Params.nominal(0.15).scaled(trim=0.1) == DB18Params.uncalibrated(0.15, 0.1)
    half = DB18Params.nominal().scaled(gain=0.5)
    assert (half.u_alpha_l, half.w_alpha_r, half.u1) == (0.75, 7.5, 5.0)
