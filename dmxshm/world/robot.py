"""The Duckiebot: dimensions, limits, and loading it into a pybullet client.

The numbers here describe ``data/duckiebot.urdf`` (keep both in step). The
robot frame has its origin at the midpoint of the wheel axle, x forward, y
left, z up; on flat ground the origin is :data:`WHEEL_RADIUS_M` high. pybullet
reports a base's pose at its centre of mass, which sits
:data:`COM_IN_BASE_M` from that origin; :mod:`dmxshm.world.world` converts,
so every pose dmxshm hands out is the axle-midpoint frame.
"""

from __future__ import annotations

import math
from pathlib import Path

from dmxshm._pybullet import pb
from dmxshm.world.motor import DUCKIEBOT

URDF_PATH = Path(__file__).parent / "data" / "duckiebot.urdf"
COLLISION_URDF_PATH = URDF_PATH.with_name("duckiebot-collision.urdf")
"""The same robot without its visual shapes: what a world that draws nothing loads (a
body loads in 1.1 ms instead of 2.7; the physics is the same, bit for bit)."""
"""The bundled robot description."""

WHEEL_RADIUS_M = 0.0318
"""Radius of each drive wheel."""

BASELINE_M = 0.11
"""Distance between the two wheels' contact points."""

CHASSIS_SIZE_M = (0.18, 0.10, 0.08)
"""Collision box of the chassis: length, width, height."""

CHASSIS_CENTER_M = (-0.03, 0.0, 0.035)
"""Centre of the chassis box in the robot frame."""

CHASSIS_FRONT_X_M = CHASSIS_CENTER_M[0] + CHASSIS_SIZE_M[0] / 2
"""x of the chassis's front face in the robot frame (0.06 m)."""

CHASSIS_BACK_X_M = CHASSIS_CENTER_M[0] - CHASSIS_SIZE_M[0] / 2
"""x of the chassis's back face in the robot frame (-0.12 m)."""

COM_IN_BASE_M = (-0.04, 0.0, 0.02)
"""Centre of mass of the base link in the robot frame (URDF ``inertial``)."""

MASS_KG = 0.97
"""Total mass: chassis 0.90, wheels 2 x 0.03, caster 0.01."""

LEFT_WHEEL, RIGHT_WHEEL = 0, 1
WHEEL_JOINTS = (LEFT_WHEEL, RIGHT_WHEEL)
"""pybullet joint indices of the left and right wheel (URDF order)."""

MAX_WHEEL_TORQUE_NM = 0.08
"""Most torque a wheel motor applies to reach its commanded speed.

About the stall torque of the Duckiebot's small gear motors. It caps the
robot's acceleration near 5 m/s^2, below the 7.8 m/s^2 at which braking
would tip it onto its nose. It is also the brake: a zero command holds the
wheels with up to this torque.
"""

MAX_WHEEL_SPEED_RAD_S = DUCKIEBOT.full_speed_rad_s
"""Commands are clipped to +-this speed: the Duckiebot motor model's full speed
(27 rad/s, 0.86 m/s at the rim; :mod:`dmxshm.world.motor` says why it wins over
the 25 rad/s of dmxshm 0.1.0)."""

LOAD_FLAGS = pb.URDF_USE_INERTIA_FROM_FILE | pb.URDF_USE_IMPLICIT_CYLINDER
"""Use the URDF's inertias (not ones guessed from the collision shapes) and
true cylinders for the wheels (not a faceted hull, which would bump)."""


def forward_speed_m_s(left_rad_s: float, right_rad_s: float) -> float:
    """Forward speed of a robot whose wheels roll without slipping.

    Example:
        >>> round(forward_speed_m_s(10.0, 10.0), 3)
        0.318
    """
    return WHEEL_RADIUS_M * (left_rad_s + right_rad_s) / 2


def yaw_rate_rad_s(left_rad_s: float, right_rad_s: float) -> float:
    """Turn rate (counter-clockwise positive) of a robot whose wheels do not slip.

    Example:
        >>> yaw_rate_rad_s(0.0, 10.0) > 0  # right wheel faster: turns left
        True
    """
    return WHEEL_RADIUS_M * (right_rad_s - left_rad_s) / BASELINE_M


def load_robot(client: int, x: float, y: float, yaw: float, visuals: bool = True) -> int:
    """Load one Duckiebot standing on flat ground at ``(x, y)``, heading ``yaw``.

    Args:
        client: pybullet physics client id.
        x: axle midpoint, m.
        y: axle midpoint, m.
        yaw: heading, rad.
        visuals: with its visual shapes (False: :data:`COLLISION_URDF_PATH`, for a
            world that draws nothing).

    Returns:
        The body id.
    """
    quat = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
    path = URDF_PATH if visuals else COLLISION_URDF_PATH
    body = pb.loadURDF(str(path), (x, y, WHEEL_RADIUS_M), quat, flags=LOAD_FLAGS,
                       physicsClientId=client)
    # Bullet's default damping (0.04) would act as air drag on a 1 kg robot.
    for link in (-1, *WHEEL_JOINTS):
        pb.changeDynamics(body, link, linearDamping=0.0, angularDamping=0.0,
                          physicsClientId=client)
    pb.setJointMotorControlArray(body, WHEEL_JOINTS, pb.VELOCITY_CONTROL,
                                 targetVelocities=(0.0, 0.0),
                                 forces=(MAX_WHEEL_TORQUE_NM, MAX_WHEEL_TORQUE_NM),
                                 physicsClientId=client)
    return body
