"""The Duckiebot's motor model: PWM duty cycle to wheel speed.

Defined once here and used by every entry point that takes PWM (``dmxshm run
--action pwm``, an outside agent's slot in a PWM run, the Duckiematrix bridge).

Duckietown's own kinematics (duckietown/dt-car-interface,
``packages/dagu_car/src/kinematics_node.py``) turns a wanted wheel speed
``omega`` (rad/s) into a duty cycle::

    u_right = omega_right * (gain + trim) / k
    u_left  = omega_left  * (gain - trim) / k
    u       = clip(u, -limit, limit)

with the robot's calibration (defaults ``gain`` 1.0, ``trim`` 0.0, the motor
constant ``k`` 27.0 and ``limit`` 1.0). The simulated motor is its inverse: a
duty ``u`` in [-limit, limit] turns the wheel at ``u * k / (gain +- trim)``
rad/s, so that an agent calibrated as the robot is gets the wheel speeds it
asked for, and a robot whose gain or trim differ from its agent's calibration
drifts as an uncalibrated Duckiebot does.

Its full speed, ``k`` at duty 1 (27 rad/s, 0.86 m/s at the rim), is the
engine's wheel-speed bound (:data:`dmxshm.world.robot.MAX_WHEEL_SPEED_RAD_S`):
the motor model wins over the 25 rad/s the engine had before it, because a
Duckiebot driven at full duty turns its wheels at the speed its own
kinematics assume, and a PWM agent must be able to reach every wheel speed a
wheel-speed agent can (the reverse would leave duty 0.93 to 1 unreachable).

**Dynamics** (:class:`Motors`): the wheel does not jump to that speed. A duty
whose magnitude is below ``dead_band`` does not overcome the gearbox's static
friction, and the wheel's speed then tends to 0; otherwise it tends to the
kinematics' speed above, through a first-order lag of time constant ``lag_s``::

    omega(t + dt) = target + (omega(t) - target) * exp(-dt / lag_s)

(the exact solution over a step in which the duty holds); physics is given the mean
speed over the step, ``target + (omega(t) - target) * (lag_s / dt) * (1 - exp(-dt /
lag_s))``, so that the distance a wheel turns in a step is the lag's exact integral.
Above the dead band the steady state is the kinematics' inverse exactly, so an agent calibrated as
its robot still gets, once settled, the speed it asked for. Duckietown publishes
neither figure for the Duckiebot's DG01D-E gear motors: ``lag_s`` 0.1 s and
``dead_band`` 0.05 are dmxshm's estimates (docs/motors.md says so), parameters
to randomise rather than constants to trust.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

ACTIONS = ("wheel-speed", "pwm")
"""The command conventions of a network (``--action``): wheel speeds in rad/s, or
the duty cycle of each wheel's motor in [-1, 1]."""


@dataclass(frozen=True)
class MotorModel:
    """Duty cycle to wheel speed, with Duckietown's kinematics' parameters.

    Attributes:
        gain: the robot's gain (Duckietown's default 1.0).
        trim: the difference between its wheels (default 0.0): with a positive
            trim the right wheel turns slower than the left at equal duty, so
            the robot veers right.
        k: the motor constant, rad/s at duty 1 with gain 1 and trim 0 (27.0).
        limit: the largest duty magnitude (1.0).
        lag_s: the first-order time constant of the wheel's speed, s (0: none).
        dead_band: the duty magnitude below which the wheel does not turn.
    """

    gain: float = 1.0
    trim: float = 0.0
    k: float = 27.0
    limit: float = 1.0
    lag_s: float = 0.1
    dead_band: float = 0.05

    def ideal(self) -> MotorModel:
        """This model without its dynamics: no lag, no dead band."""
        return replace(self, lag_s=0.0, dead_band=0.0)

    def to_dict(self) -> dict[str, float]:
        """The parameters as JSON (a summary's, an env's ``info``)."""
        return asdict(self)

    @property
    def full_speed_rad_s(self) -> float:
        """The fastest wheel's speed at full duty: ``k * limit / (gain - |trim|)``.

        Example:
            >>> MotorModel().full_speed_rad_s
            27.0
        """
        return self.k * self.limit / (self.gain - abs(self.trim))

    def _per_volt(self) -> np.ndarray:
        # rad/s per unit duty, (left, right)
        return np.array([self.k / (self.gain - self.trim), self.k / (self.gain + self.trim)])

    def wheel_speed(self, duty: np.ndarray) -> np.ndarray:
        """Steady-state wheel speeds (rad/s) of ``(..., 2)`` duties (left, right),
        each clipped to +-``limit`` first, as the motor driver does; a duty within
        the dead band turns nothing.

        Example:
            >>> MotorModel().wheel_speed(np.array([[0.5, -1.0], [0.04, 0.06]]))
            array([[ 13.5 , -27.  ],
                   [  0.  ,   1.62]])
        """
        u = np.clip(np.asarray(duty, np.float64), -self.limit, self.limit)
        if self.dead_band > 0.0:
            u = np.where(np.abs(u) < self.dead_band, 0.0, u)
        return u * self._per_volt()

    def duty(self, wheel_speed_rad_s: np.ndarray) -> np.ndarray:
        """The duties (left, right) Duckietown's kinematics send for ``(..., 2)``
        wanted wheel speeds, clipped to +-``limit``.

        Example:
            >>> MotorModel().duty(np.array([[13.5, 54.0]]))
            array([[0.5, 1. ]])
        """
        u = np.asarray(wheel_speed_rad_s, np.float64) / self._per_volt()
        return np.clip(u, -self.limit, self.limit)


DUCKIEBOT = MotorModel()
"""The default Duckiebot: Duckietown's defaults (gain 1, trim 0, k 27, limit 1)
and dmxshm's estimated dynamics (lag 0.1 s, dead band 0.05)."""


class Motors:
    """The wheels of ``robots`` robots driven by duties through ``model``: each
    :meth:`step` advances their speeds by ``dt_s`` (see the module docstring).

    Args:
        model: the motor model (its dynamics; ``model.ideal()`` for none), or one
            model per robot (a network's randomised robots).
        robots: how many robots.
        dt_s: the time a duty holds, per :meth:`step`.

    Example:
        >>> m = Motors(DUCKIEBOT, 1, 0.1)
        >>> [round(float(m.step(np.array([[0.5, 0.5]]))[0, 0]), 3) for _ in range(3)]
        [4.966, 10.361, 12.345]
        >>> two = Motors([DUCKIEBOT, MotorModel(gain=0.9)], 2, 0.1)
        >>> two.step(np.array([[0.5, 0.5], [0.5, 0.5]]))[:, 0].round(3).tolist()
        [4.966, 5.518]
    """

    def __init__(self, model: MotorModel | Sequence[MotorModel], robots: int,
                 dt_s: float) -> None:
        models = [model] * robots if isinstance(model, MotorModel) else list(model)
        if len(models) != robots:
            raise ValueError(f"{len(models)} motor models for {robots} robots")
        self.models = models
        self.model = models[0] if models else DUCKIEBOT
        self.speed = np.zeros((robots, 2))  # at the end of the last step
        self._one = isinstance(model, MotorModel) or len(set(models)) <= 1
        keeps = [_keeps(m, dt_s) for m in models] or [_keeps(self.model, dt_s)]
        if self._one:
            self.keep, self.mean_keep = keeps[0]
        else:  # a column per robot, as the (robots, 2) speeds take it
            self.keep = np.array([k for k, _ in keeps])[:, None]
            self.mean_keep = np.array([m for _, m in keeps])[:, None]
            self._limit = np.array([m.limit for m in models])[:, None]
            self._band = np.array([m.dead_band for m in models])[:, None]
            self._per_volt = np.array([m._per_volt() for m in models])

    def step(self, duty: np.ndarray) -> np.ndarray:
        """The mean wheel speeds (rad/s) over a step in which ``(robots, 2)`` duties
        hold (a new array); the speeds at its end are the next step's start."""
        if self._one:
            target = self.model.wheel_speed(duty)
        else:
            u = np.clip(np.asarray(duty, np.float64), -self._limit, self._limit)
            target = np.where(np.abs(u) < self._band, 0.0, u) * self._per_volt
        mean = target + (self.speed - target) * self.mean_keep
        self.speed = target + (self.speed - target) * self.keep
        return mean

    def step_one(self, left: float, right: float) -> list[float]:
        """:meth:`step` of a one-robot ``Motors`` with the duties as plain floats
        (an env's path: the same arithmetic without numpy's per-call cost)."""
        m, lim, band = self.model, self.model.limit, self.model.dead_band
        speed, keep, mean_keep = self.speed[0], self.keep, self.mean_keep
        out = []
        for i, (u, per) in enumerate(((left, m.k / (m.gain - m.trim)),
                                      (right, m.k / (m.gain + m.trim)))):
            u = max(-lim, min(lim, u))
            target = 0.0 if abs(u) < band else u * per
            start = float(speed[i])
            out.append(target + (start - target) * mean_keep)
            speed[i] = target + (start - target) * keep
        return out

    def stop(self, robots: list[int] | np.ndarray | None = None) -> None:
        """Wheels at rest (a robot put back at its start): ``robots``, or all."""
        if robots is None:
            self.speed[:] = 0.0
        else:
            self.speed[np.asarray(robots, np.int64)] = 0.0


def _keeps(model: MotorModel, dt_s: float) -> tuple[float, float]:
    """What of a wheel's speed a step of ``dt_s`` keeps, at its end and on its mean:
    ``exp(-dt / lag)`` and ``(lag / dt) (1 - exp(-dt / lag))`` (0 without a lag)."""
    if model.lag_s <= 0.0:
        return 0.0, 0.0
    keep = math.exp(-dt_s / model.lag_s)
    return keep, model.lag_s / dt_s * (1.0 - keep)
