"""Duckietown's DB18 motion model, stepped for every robot of a process at once.

The model is the one Duckietown's Duckiematrix engine and gym-duckietown move their
robots with (``lib-dt-modeling``, ``dt_modeling.dynamics.pwm_dynamics``): a
second-order unicycle driven by the two motors' PWM duties ``l``, ``r`` in [-1, 1]::

    u' = -u1 u - u2 w + u3 w^2 + ua_r r + ua_l l        (forward speed, m/s)
    w' = -w1 w - w2 u - w3 u w + wa_r r - wa_l l        (yaw rate, rad/s)

Each step integrates the velocities explicitly (``u += dt u'``) and then the pose by
SE(2)'s exponential at the new velocities; the wheels turn at ``(u -+ w d / 2) / R``.
The nominal DB18 has u1 = 5, w1 = 4, ua = 1.5, wa = 15 and the rest 0 (full duty on
both wheels: 2 x 1.5 / 5 = 0.6 m/s, reached with a time constant of 0.2 s); its
uncalibrated variant scales ``wa_r``, ``wa_l`` by ``1 + trim``, ``1 - trim``. A command
delay replays the command given ``delay_s`` earlier, picked as lib-dt-modeling picks it
(the nearest command in time, the later one on a tie; zero duties before the first).

:class:`DB18` holds N robots as arrays and steps them in a handful of numpy calls: it
is equal to lib-dt-modeling's own integration (``tests/sim/test_db18.py`` checks poses,
velocities and wheel angles to 1e-9 over random duties, trims and delays).

Example:
    >>> import numpy as np
    >>> model = DB18([DB18Params.nominal()] * 2)
    >>> for _ in range(90):                      # 3 s at 30 Hz, full duty on both wheels
    ...     model.step(1 / 30, np.ones((2, 2)))
    >>> round(float(model.u[0]), 3), round(float(model.x[0]), 3)
    (0.6, 1.7)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from dmxshm.sim import db18_kernels as kernels

WHEEL_RADIUS_M = 0.067 / 2
"""lib-dt-modeling's wheel radius (6.7 cm wheels)."""
WHEEL_DISTANCE_M = 0.1
"""lib-dt-modeling's distance between the wheels."""
ENCODER_TICKS = 135
"""Encoder ticks per wheel turn."""
WHEEL_SPEED_PER_DUTY_RAD_S = 27.0
"""Duckietown's kinematics: a duty of 1 turns a wheel at 27 rad/s (``k``): how a wheel
speed command becomes a duty under DB18."""


@dataclass(frozen=True)
class DB18Params:
    """One robot's model parameters (lib-dt-modeling's names).

    Attributes:
        u1, u2, u3: the forward speed's damping and couplings.
        w1, w2, w3: the yaw rate's damping and couplings.
        u_alpha_r, u_alpha_l: forward acceleration per unit of right, left duty.
        w_alpha_r, w_alpha_l: yaw acceleration per unit of right, left duty.
        delay_s: the command delay (0: none).
    """

    u1: float = 5.0
    u2: float = 0.0
    u3: float = 0.0
    w1: float = 4.0
    w2: float = 0.0
    w3: float = 0.0
    u_alpha_r: float = 1.5
    u_alpha_l: float = 1.5
    w_alpha_r: float = 15.0
    w_alpha_l: float = 15.0
    delay_s: float = 0.0

    @classmethod
    def nominal(cls, delay_s: float = 0.0) -> DB18Params:
        """lib-dt-modeling's ``get_DB18_nominal(delay)``."""
        return cls(delay_s=float(delay_s))

    @classmethod
    def uncalibrated(cls, delay_s: float = 0.0, trim: float = 0.0) -> DB18Params:
        """lib-dt-modeling's ``get_DB18_uncalibrated(delay, trim)``: the yaw gains
        scaled by ``1 + trim`` (right) and ``1 - trim`` (left)."""
        return cls(w_alpha_r=15 * (1.0 + trim), w_alpha_l=15 * (1.0 - trim),
                   delay_s=float(delay_s))

    def scaled(self, gain: float = 1.0, trim: float = 0.0) -> DB18Params:
        """These parameters with every duty gain scaled by ``gain``, and the yaw gains
        further by ``1 + trim`` (right) and ``1 - trim`` (left), as
        :meth:`uncalibrated` does (domain randomisation's draw of gain and trim)."""
        return replace(self, u_alpha_r=self.u_alpha_r * gain, u_alpha_l=self.u_alpha_l * gain,
                       w_alpha_r=self.w_alpha_r * gain * (1.0 + trim),
                       w_alpha_l=self.w_alpha_l * gain * (1.0 - trim))


def drawn(base: DB18Params, params: dict[str, float] | None) -> DB18Params:
    """``base`` as a randomisation draw makes it (:mod:`dmxshm.world.randomize`): every
    duty gain by ``motor_gain``, the yaw gains by ``1 +- motor_trim``
    (:meth:`DB18Params.scaled`); ``u1`` and ``w1`` by ``model_u1_scale`` and
    ``model_w1_scale`` and ``model_delay_s`` added to the delay, where drawn. None: ``base``.

    Example:
        >>> drawn(DB18Params(), {"motor_gain": 1.0, "motor_trim": 0.1,
        ...                      "model_w1_scale": 1.5}).w1
        6.0
    """
    if params is None:
        return base
    p = base.scaled(params["motor_gain"], params["motor_trim"])
    return replace(p, u1=p.u1 * params.get("model_u1_scale", 1.0),
                   w1=p.w1 * params.get("model_w1_scale", 1.0),
                   delay_s=p.delay_s + params.get("model_delay_s", 0.0))


_PARAMS = ("u1", "u2", "u3", "w1", "w2", "w3", "u_alpha_r", "u_alpha_l", "w_alpha_r",
           "w_alpha_l", "delay_s")


class DB18:
    """N robots moved by the DB18 model, as arrays.

    The pose is kept as lib-dt-modeling keeps it (a rotation matrix and a translation,
    composed step by step), so that the two agree to rounding.

    Args:
        params: each robot's parameters (one :class:`DB18Params` per robot).
        poses: each robot's start ``(x, y, yaw)`` (default: all at the origin).

    Attributes:
        x, y: positions, m; ``c``, ``s``: the rotation's first column (cos, sin of
            the heading) as composed; ``r01``, ``r11``: its second column.
        u, w: forward speed (m/s) and yaw rate (rad/s).
        axis_l, axis_r: the wheels' angles, rad (unwrapped).
        du: the last step's forward acceleration (m/s^2).
    """

    def __init__(self, params: Sequence[DB18Params],
                 poses: Sequence[tuple[float, float, float]] | None = None) -> None:
        n = self.n = len(params)
        self._s = np.zeros((n, 11))   # x, y, r00, r10, r01, r11, u, w, du, axis_l, axis_r
        self._s[:, 2] = self._s[:, 5] = 1.0
        self._t = np.zeros(n)        # lib-dt-modeling's accumulated time (for the delay)
        self._first_t = np.zeros(n)  # when each robot's first command was given
        # Past commands (delayed robots): times, duties, how many given since placed.
        self._times = np.zeros((n, 0))
        self._commands = np.zeros((n, 0, 2))
        self._count = np.zeros(n, np.int64)
        self._dt: float | None = None
        self.params: list[DB18Params] = list(params)
        self._columns()
        self.place(np.arange(n), poses if poses is not None else [(0.0, 0.0, 0.0)] * n)

    def _columns(self) -> None:
        self._p = np.array([[p.u1, p.u2, p.u3, p.w1, p.w2, p.w3, p.u_alpha_r, p.u_alpha_l,
                             p.w_alpha_r, p.w_alpha_l] for p in self.params],
                           float).reshape(-1, 10)
        self._delay_s = np.array([p.delay_s for p in self.params], float)
        self._delayed = np.flatnonzero(self._delay_s > 0)

    # The state's columns, by name (views: writing one writes the state).
    x = property(lambda self: self._s[:, 0], lambda self, v: self._set(0, v))
    y = property(lambda self: self._s[:, 1], lambda self, v: self._set(1, v))
    c = property(lambda self: self._s[:, 2], lambda self, v: self._set(2, v))
    s = property(lambda self: self._s[:, 3], lambda self, v: self._set(3, v))
    r01 = property(lambda self: self._s[:, 4], lambda self, v: self._set(4, v))
    r11 = property(lambda self: self._s[:, 5], lambda self, v: self._set(5, v))
    u = property(lambda self: self._s[:, 6], lambda self, v: self._set(6, v))
    w = property(lambda self: self._s[:, 7], lambda self, v: self._set(7, v))
    du = property(lambda self: self._s[:, 8], lambda self, v: self._set(8, v))
    axis_l = property(lambda self: self._s[:, 9], lambda self, v: self._set(9, v))
    axis_r = property(lambda self: self._s[:, 10], lambda self, v: self._set(10, v))

    def _set(self, column: int, value: np.ndarray) -> None:
        self._s[:, column] = value

    def set_params(self, rows: Sequence[int] | np.ndarray,
                   params: Sequence[DB18Params]) -> None:
        """Give ``rows`` new parameters (a randomised robot's, at a reset; its delayed
        commands are forgotten)."""
        rows = np.asarray(rows, np.int64)
        for row, p in zip(rows.tolist(), params, strict=True):
            self.params[row] = p
        self._columns()
        self._count[rows] = 0

    @property
    def yaw(self) -> np.ndarray:
        """Each robot's heading, rad, in (-pi, pi]."""
        return np.arctan2(self.s, self.c)

    def place(self, rows: Sequence[int] | np.ndarray,
              poses: Sequence[tuple[float, float, float]]) -> None:
        """Put ``rows`` at ``poses`` at rest: velocities, wheel angles, time and delayed
        commands zeroed (a fresh ``initialize`` of lib-dt-modeling)."""
        rows = np.asarray(rows, np.int64)
        if len(rows) == 0:
            return
        p = np.asarray(poses, float).reshape(len(rows), 3)
        yaw = p[:, 2]
        self.x[rows], self.y[rows] = p[:, 0], p[:, 1]
        c, s = np.cos(yaw), np.sin(yaw)
        self.c[rows], self.s[rows], self.r01[rows], self.r11[rows] = c, s, -s, c
        self._s[rows, 6:] = 0.0
        self._t[rows] = 0.0
        self._count[rows] = 0

    def wheel_rates(self) -> tuple[np.ndarray, np.ndarray]:
        """The left and right wheels' speeds at the current velocities, rad/s."""
        half = 0.5 * WHEEL_DISTANCE_M * self.w
        return (self.u - half) / WHEEL_RADIUS_M, (self.u + half) / WHEEL_RADIUS_M

    def step(self, dt: float, duties: np.ndarray) -> None:
        """Advance every robot by ``dt`` seconds under ``duties`` (shape ``(n, 2)``,
        left and right; clipped to [-1, 1] by the model)."""
        duties = np.asarray(duties, float)
        left, right = duties[:, 0], duties[:, 1]
        if len(self._delayed):
            left, right = self._delay(dt, left, right, self._delayed)
        kernels.step(float(dt), np.ascontiguousarray(left), np.ascontiguousarray(right),
                     self._p, self._s, WHEEL_RADIUS_M, WHEEL_DISTANCE_M)

    def step_rows(self, rows: np.ndarray, dt: float, duties: np.ndarray) -> None:
        """:meth:`step` of ``rows`` alone (``duties`` ``(len(rows), 2)``): the others
        keep their state, their time and their past commands."""
        rows = np.asarray(rows, np.int64)
        duties = np.asarray(duties, float)
        left, right = np.zeros(self.n), np.zeros(self.n)
        left[rows], right[rows] = duties[:, 0], duties[:, 1]
        delayed = self._delayed[np.isin(self._delayed, rows)] if len(self._delayed) else None
        if delayed is not None and len(delayed):
            left, right = self._delay(dt, left, right, delayed)
        s = self._s[rows]
        kernels.step(float(dt), left[rows], right[rows], self._p[rows], s, WHEEL_RADIUS_M,
                     WHEEL_DISTANCE_M)
        self._s[rows] = s

    def set_row(self, row: int, other: DB18, at: int = 0) -> None:
        """Row ``row`` becomes ``other``'s row ``at``, a robot just placed (no command
        given since: :meth:`place`): its parameters, state and time (a batch taking an
        env's robot in at a reset)."""
        if other._count[at]:
            raise ValueError("set_row takes a robot just placed (no past commands)")
        self.params[row] = other.params[at]
        self._p[row] = other._p[at]
        self._delay_s[row] = other._delay_s[at]
        self._delayed = np.flatnonzero(self._delay_s > 0)
        self._s[row] = other._s[at]
        self._t[row], self._first_t[row] = other._t[at], other._first_t[at]
        self._count[row] = 0

    def _delay(self, dt: float, left: np.ndarray, right: np.ndarray, rows: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """The delayed robots' commands, as lib-dt-modeling's ``DelayedDynamics`` picks
        them: each command is kept with the time it was given; after the step's time is
        added, the command nearest to ``t - delay`` is applied (the later of two equally
        near; zero duties while ``t - delay`` is before the first command)."""
        # Enough past commands that the nearest to t - delay is always kept.
        keep = int(math.ceil(float(self._delay_s[rows].max()) / dt)) + 3
        if self._dt != dt:
            self._count[:] = 0  # another step: the times kept are of another clock
            self._dt = dt
        if keep > self._times.shape[1]:  # more room (entries are kept from the left)
            grow = keep - self._times.shape[1]
            self._times = np.pad(self._times, ((0, 0), (0, grow)))
            self._commands = np.pad(self._commands, ((0, 0), (0, grow), (0, 0)))
        keep = self._times.shape[1]
        times, commands = self._times[rows], self._commands[rows]
        count = self._count[rows]
        full = count >= keep
        if np.any(full):  # drop the oldest: the window slides by one
            times[full, :-1] = times[full, 1:]
            commands[full, :-1] = commands[full, 1:]
        slot = np.minimum(count, keep - 1)
        k = np.arange(len(rows))
        t_now = self._t[rows]
        times[k, slot] = t_now
        commands[k, slot, 0] = left[rows]
        commands[k, slot, 1] = right[rows]
        first_t = np.where(count == 0, t_now, self._first_t[rows])
        count = count + 1
        self._times[rows], self._commands[rows] = times, commands
        self._count[rows], self._first_t[rows] = count, first_t
        t_next = t_now + dt
        self._t[rows] = t_next
        query = t_next - self._delay_s[rows]
        filled = np.minimum(count, keep)
        valid = np.arange(keep)[None, :] < filled[:, None]
        idx = np.sum(valid & (times < query[:, None]), axis=1)
        before = np.maximum(idx - 1, 0)
        after = np.minimum(idx, filled - 1)
        t_before = times[k, before]
        t_after = times[k, after]
        pick_before = (idx > 0) & ((idx == filled)
                                   | (np.abs(query - t_before) < np.abs(query - t_after)))
        pick = np.where(pick_before, before, after)
        chosen = commands[k, pick]
        chosen[query < first_t] = 0.0
        left, right = left.copy(), right.copy()
        left[rows], right[rows] = chosen[:, 0], chosen[:, 1]
        return left, right
