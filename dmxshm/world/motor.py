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
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """

    gain: float = 1.0
    trim: float = 0.0
    k: float = 27.0
    limit: float = 1.0

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
        """Wheel speeds (rad/s) of ``(..., 2)`` duties (left, right), each clipped
        to +-``limit`` first, as the motor driver does.

        Example:
            >>> MotorModel().wheel_speed(np.array([[0.5, -1.0]]))
            array([[ 13.5, -27. ]])
        """
        u = np.clip(np.asarray(duty, np.float64), -self.limit, self.limit)
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
"""The default Duckiebot: Duckietown's defaults (gain 1, trim 0, k 27, limit 1)."""
