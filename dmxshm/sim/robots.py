"""What a robot is made of and how it moves: one path from a domain randomisation draw
to its physics, its motors and its sensors' noise, for every front-end (the network's
engine and renderers, ``DuckieLane-v1``, the multi-robot worlds), and
:class:`Robots`, the commands -> motors -> physics step and the resets of a world's
robots.

A draw (:func:`dmxshm.world.randomize.robot_draws`, or one robot's parameters drawn
by an env at reset) is a dict of every parameter; ``None`` is the nominal robot.
:func:`robot_make` turns it into a :class:`RobotMake` and :func:`apply_physics` gives
a world's robots their friction, mass and wheel radius::

    makes = [robot_make(p, DUCKIEBOT) for p in draws]   # motor and noise per robot
    apply_physics(world, range(len(makes)), makes)
    motors = Motors([m.motor for m in makes], len(makes), world.dt_s)

Before this module, each front-end turned a draw into a motor model itself, and the
copies disagreed on what they kept of the base model (the network kept its ``k`` and
``limit``, the envs dropped them to the defaults).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from dmxshm.matrix.noise import DUCKIEBOT as DUCKIEBOT_NOISE
from dmxshm.matrix.noise import NoiseModel
from dmxshm.world import randomize as rand
from dmxshm.world.motor import MotorModel, Motors


@dataclass(frozen=True)
class RobotMake:
    """One robot as its draw made it.

    Attributes:
        motor: its motor model (the base model with the draw's gain, trim and lag).
        noise: its sensors' noise model (the Duckiebot's, scaled by ``noise_scale``).
        friction, mass, wheel_radius: its physics (the draw's, or nominal).
        drawn: whether a draw made it (False: the nominal robot).
    """

    motor: MotorModel
    noise: NoiseModel
    friction: float
    mass: float
    wheel_radius: float
    drawn: bool


def robot_make(params: Mapping[str, float] | None, motor: MotorModel,
               noise: NoiseModel = DUCKIEBOT_NOISE) -> RobotMake:
    """The robot that the draw ``params`` makes of the base ``motor`` and ``noise``
    models (None: the nominal robot, the base models themselves).

    The drawn motor keeps everything of the base model but its gain, trim and lag (a
    base without lag, ``motor_dynamics=False``, stays without).

    Example:
        >>> from dmxshm.world.motor import DUCKIEBOT
        >>> p = {**rand.NOMINAL, "motor_gain": 0.9, "motor_lag_s": 0.2}
        >>> make = robot_make(p, replace(DUCKIEBOT, k=20.0))
        >>> make.motor.gain, make.motor.k, make.motor.lag_s
        (0.9, 20.0, 0.2)
        >>> robot_make(None, DUCKIEBOT).motor is DUCKIEBOT
        True
    """
    if params is None:
        p = rand.NOMINAL
        return RobotMake(motor, noise, p["friction"], p["mass"], p["wheel_radius"], False)
    drawn_motor = replace(motor, gain=params["motor_gain"], trim=params["motor_trim"],
                          lag_s=params["motor_lag_s"] if motor.lag_s else 0.0)
    return RobotMake(drawn_motor, noise.scaled(params["noise_scale"]), params["friction"],
                     params["mass"], params["wheel_radius"], True)


def robot_makes(draws: Sequence[Mapping[str, float]] | None, robots: int,
                motor: MotorModel, noise: NoiseModel = DUCKIEBOT_NOISE) -> list[RobotMake]:
    """:func:`robot_make` of each of ``robots`` robots (``draws`` None: all nominal)."""
    if draws is not None and len(draws) != robots:
        raise ValueError(f"{len(draws)} draws for {robots} robots")
    return [robot_make(None if draws is None else draws[i], motor, noise)
            for i in range(robots)]


class _RobotPhysics(Protocol):
    def set_robot_physics(self, robot: int, friction: float = 1.0, mass: float = 1.0,
                          wheel_radius: float = 1.0) -> None: ...


def apply_physics(world: _RobotPhysics, robots: Iterable[int],
                  makes: Sequence[RobotMake]) -> None:
    """Give ``world``'s ``robots`` the friction, mass and wheel radius of their makes
    (``makes[j]`` for the j-th of ``robots``)."""
    for robot, make in zip(robots, makes, strict=True):
        world.set_robot_physics(robot, make.friction, make.mass, make.wheel_radius)


class Robots:
    """The robots of one world as the simulation moves them: their commands (wheel
    speeds, or duties through each robot's motor model), the physics step, and their
    resets. Every multi-robot front-end steps its robots here: the network's engine
    (all its loops) and the multi-robot world.

    Args:
        world: the physics: a Bullet :class:`~dmxshm.world.world.World`, or a
            :class:`~dmxshm.sim.planar.PlanarWorld`, whose DB18 model steps every robot
            in one call.
        motors: the motor model of every robot, or one per robot, when commands are
            duties (``action="pwm"``); None: commands are wheel speeds (rad/s). Under
            DB18 the duties are the model's own input (no motor model on top: its
            delay is its lag), and wheel speeds become duties by Duckietown's
            kinematics.
    """

    def __init__(self, world: Any,
                 motors: MotorModel | Sequence[MotorModel] | None = None) -> None:
        self.world = world
        self._pwm = motors is not None
        self._planar = getattr(world, "physics", "bullet") == "db18"
        self.motors = (Motors(motors, world.num_robots, world.dt_s)
                       if motors is not None and not self._planar else None)

    @property
    def duties(self) -> bool:
        """Commands are duties (else wheel speeds)."""
        return self._pwm

    def wheel_speeds(self, commands: np.ndarray) -> np.ndarray:
        """What the world is given for ``commands`` over the next step (:meth:`step`'s
        argument): the commands themselves, or, under Bullet, the motors' mean wheel
        speeds (rad/s) under the duties (which advances the motors by a step)."""
        return commands if self.motors is None else self.motors.step(commands)

    def step(self, applied: np.ndarray) -> None:
        """One physics step with :meth:`wheel_speeds`'s output."""
        if self._planar and self._pwm:
            self.world.apply_duties(applied)
        else:
            self.world.apply_wheel_speeds(applied)
        self.world.step()

    def stop(self, rows: Sequence[int] | np.ndarray) -> None:
        """The motors of ``rows`` at rest at once (an ended episode's robot)."""
        if self.motors is not None:
            self.motors.stop(np.asarray(rows, np.int64))

    def reset(self, rows: Sequence[int] | np.ndarray) -> None:
        """``rows`` back at their start poses, at rest, their motors stopped."""
        self.world.return_to_start([int(r) for r in rows])
        self.stop(rows)
