"""How a robot's step is scored: DuckieLane-v1's reward, with the robots' collisions.

One rule for every place that scores robots: the multi-robot worlds of
:mod:`dmxshm.batch.lanes` (PettingZoo's ``ParallelEnv`` and the multi-agent batch) and a
network's engine with ``--episodes`` (:mod:`dmxshm.network.episodes`), so that a reward
means the same wherever it comes from::

    progress = forward speed * cos(heading error) * dt       (m along the lane)
    reward   = progress - offset_penalty * |offset| * dt - collision_penalty * collided
    terminated = off the road, or collided with ``end_on_collision``

``collided``: a contact with another robot or an object *began* in this step (one that
lasts costs once).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

OFFSET_PENALTY = 2.0
"""Reward lost per metre of lane offset per second."""
COLLISION_PENALTY = 1.0
"""Reward lost when a robot's contact with a robot or an object begins."""


def forward_speed(quat_xyzw: Sequence[float], velocity: Sequence[float]) -> float:
    """Speed along the robot's own forward axis (m/s), from its orientation and its
    world-frame velocity.

    Example:
        >>> round(forward_speed((0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)),
        ...                     (0.0, 0.5, 0.0)), 6)   # facing +y, driving +y
        0.5
    """
    qx, qy, qz, qw = quat_xyzw
    vx, vy, vz = velocity
    # the first column of the rotation matrix: the robot's x axis in the world
    return ((1 - 2 * (qy * qy + qz * qz)) * vx + 2 * (qx * qy + qz * qw) * vy
            + 2 * (qx * qz - qy * qw) * vz)


def lane_score(speed_m_s: float, heading_rad: float, offset_m: float, on_road: bool,
               collided: bool, dt_s: float, *, offset_penalty: float = OFFSET_PENALTY,
               collision_penalty: float = COLLISION_PENALTY,
               end_on_collision: bool = True) -> tuple[float, float, bool]:
    """``(reward, progress_m, terminated)`` of one robot's step (see the module
    docstring). A NaN heading or offset (off every lane) counts as 0.

    Example:
        >>> lane_score(0.5, 0.0, 0.1, True, False, 0.1)
        (0.03, 0.05, False)
    """
    heading = 0.0 if heading_rad != heading_rad else heading_rad
    offset = 0.0 if offset_m != offset_m else offset_m
    progress = speed_m_s * math.cos(heading) * dt_s
    reward = (progress - offset_penalty * abs(offset) * dt_s
              - (collision_penalty if collided else 0.0))
    return reward, progress, (not on_road) or (collided and end_on_collision)
