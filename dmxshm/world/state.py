"""The physical state of a robot as one numpy record, and frame helpers.

:data:`ROBOT_STATE_DTYPE` is the record the engine writes into the state ring
and renderers read back (160 bytes, little-endian float64, no padding). All
quantities are in the world frame (x east, y north, z up) and describe the
robot frame, whose origin is the midpoint of the wheel axle (see
:mod:`dmxshm.world.robot`):

=====================  =======  ==============================================
field                  shape    meaning
=====================  =======  ==============================================
``pos_m``              (3,)     axle midpoint, m
``quat_xyzw``          (4,)     orientation, unit quaternion (x, y, z, w)
``lin_vel_m_s``        (3,)     velocity of the axle midpoint, m/s
``ang_vel_rad_s``      (3,)     angular velocity, rad/s
``lin_acc_m_s2``       (3,)     (v(t) - v(t - dt)) / dt over the last step,
                                gravity not included; zero after a reset
``wheel_angle_rad``    (2,)     left, right wheel angle (unwrapped), rad
``wheel_rate_rad_s``   (2,)     left, right wheel speed, rad/s
=====================  =======  ==============================================
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dmxshm.world.robot import WHEEL_RADIUS_M

ROBOT_STATE_DTYPE = np.dtype([
    ("pos_m", "<f8", (3,)),
    ("quat_xyzw", "<f8", (4,)),
    ("lin_vel_m_s", "<f8", (3,)),
    ("ang_vel_rad_s", "<f8", (3,)),
    ("lin_acc_m_s2", "<f8", (3,)),
    ("wheel_angle_rad", "<f8", (2,)),
    ("wheel_rate_rad_s", "<f8", (2,)),
])
"""One robot's state; a world's state is an array of these, one per robot."""


def rotation_matrices(quat_xyzw: np.ndarray) -> np.ndarray:
    """Rotation matrices (robot frame to world frame) of unit quaternions.

    Args:
        quat_xyzw: shape ``(..., 4)``.

    Returns:
        Shape ``(..., 3, 3)``; ``R @ v_robot`` is ``v`` in the world frame.

    Example:
        >>> q = np.array([0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)])  # yaw 90 deg
        >>> np.round(rotation_matrices(q) @ [1.0, 0.0, 0.0], 6) + 0.0
        array([0., 1., 0.])
    """
    q = np.asarray(quat_xyzw, dtype=np.float64)
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def yaw_of(quat_xyzw: np.ndarray) -> np.ndarray:
    """Heading (rotation about z, rad, in ``(-pi, pi]``) of quaternions ``(..., 4)``.

    The arctangent is the C library's, one value at a time (``math.atan2``), not
    numpy's vectorised ``arctan2``: on a CPU with AVX-512 numpy takes another code
    path whose last bits differ, and a run must be bit-identical on every machine
    (a heading feeds the observations, the policies and so the physics).
    """
    q = np.asarray(quat_xyzw, dtype=np.float64)
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    num, den = 2 * (w * z + x * y), 1 - 2 * (y * y + z * z)
    if num.ndim == 0:
        return np.float64(math.atan2(float(num), float(den)))
    flat = list(map(math.atan2, num.ravel().tolist(), den.ravel().tolist()))
    return np.array(flat, np.float64).reshape(num.shape)


def poses_2d(states: np.ndarray) -> np.ndarray:
    """``(x, y, yaw)`` of each robot, shape ``(R, 3)``, from a state array.

    Example:
        >>> s = np.zeros(1, ROBOT_STATE_DTYPE)
        >>> s["pos_m"] = [1.0, 2.0, 0.03]
        >>> s["quat_xyzw"] = [0.0, 0.0, 0.0, 1.0]
        >>> poses_2d(s)
        array([[1., 2., 0.]])
    """
    return np.column_stack([states["pos_m"][:, 0], states["pos_m"][:, 1],
                            yaw_of(states["quat_xyzw"])])


def rest_states(poses: Sequence[tuple[float, float, float]]) -> np.ndarray:
    """States of robots standing still on flat ground at ``(x, y, yaw)`` poses.

    Example:
        >>> s = rest_states([(1.0, 2.0, np.pi / 2)])
        >>> np.round(poses_2d(s), 6)
        array([[1.      , 2.      , 1.570796]])
    """
    out = np.zeros(len(poses), ROBOT_STATE_DTYPE)
    for i, (x, y, yaw) in enumerate(poses):
        out[i]["pos_m"] = (x, y, WHEEL_RADIUS_M)
        out[i]["quat_xyzw"] = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
    return out
