"""Per-robot sensors computed from a pybullet client and a robot's state.

Every sensor is a pure function of the scene and one
:data:`~dmxshm.world.state.ROBOT_STATE_DTYPE` record, so a renderer process
that mirrors the engine's state produces exactly the engine's readings.
These are the exact readings; a network adds each part's noise to them
(:mod:`dmxshm.matrix.noise`, on by default, keyed so that every process agrees).

================  ==========================================  =========
sensor            reading                                     rate
================  ==========================================  =========
camera            ``(H, W, 3)`` uint8 RGB (:class:`Camera`)   30 Hz
IMU               acceleration and angular velocity, robot    100 Hz
                  frame, float32 (:func:`imu`)
wheel encoders    cumulative ticks, 135 per revolution,       30 Hz
                  int64 (:func:`encoders`)
time of flight    range straight ahead, m, at most 1.2        15 Hz
                  (:class:`TimeOfFlight`)
================  ==========================================  =========

The rates are the defaults of realtime mode (each sensor's registration in
:mod:`dmxshm.sim.sensing`, whose ``DEFAULT_RATES_HZ`` lists them); in gym mode every
sensor produces once per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dmxshm._pybullet import pb
from dmxshm.matrix.camera import Camera, CameraError, quat_matrix, to_world
from dmxshm.matrix.obs import obs_dtype
from dmxshm.world.robot import CHASSIS_FRONT_X_M
from dmxshm.world.world import GRAVITY_M_S2

__all__ = [
    "CAMERA_RATE_HZ", "ENCODER_RATE_HZ", "ENCODER_TICKS_PER_REV",
    "IMU_RATE_HZ", "TOF_MOUNT_M", "TOF_RATE_HZ", "Camera", "CameraError", "TimeOfFlight",
    "encoders", "encoders_many", "imu", "imu_many", "obs_dtype",
]

CAMERA_RATE_HZ = 30.0
"""Default camera frame rate."""

IMU_RATE_HZ = 100.0
"""Default IMU rate."""

ENCODER_RATE_HZ = 30.0
"""Default wheel-encoder rate."""

TOF_RATE_HZ = 15.0
"""Default time-of-flight rate."""

ENCODER_TICKS_PER_REV = 135
"""Encoder ticks per wheel revolution (the Duckiebot's hall-effect encoders)."""

TOF_MOUNT_M = (CHASSIS_FRONT_X_M + 0.001, 0.0, 0.02)
"""Time-of-flight sensor in the robot frame: 1 mm ahead of the chassis front,
about 5 cm above the ground, so its ray never starts inside its own robot."""


def imu(state_row: np.void) -> tuple[np.ndarray, np.ndarray]:
    """What an IMU fixed to the robot frame reads.

    The accelerometer measures specific force: the state's kinematic
    acceleration minus gravity, so a robot at rest reads ``+9.81`` on z.

    Args:
        state_row: one :data:`~dmxshm.world.state.ROBOT_STATE_DTYPE` record.

    Returns:
        ``(lin_acc_m_s2[3], ang_vel_rad_s[3])``, float32, robot frame.

    Example:
        >>> from dmxshm.world.state import ROBOT_STATE_DTYPE
        >>> s = np.zeros((), ROBOT_STATE_DTYPE)
        >>> s["quat_xyzw"] = [0.0, 0.0, 0.0, 1.0]
        >>> imu(s)[0]
        array([0.  , 0.  , 9.81], dtype=float32)
    """
    rot = np.array(quat_matrix(tuple(state_row["quat_xyzw"].tolist())))
    specific = state_row["lin_acc_m_s2"] + (0.0, 0.0, GRAVITY_M_S2)
    # rot maps robot to world; its transpose maps world to robot.
    return ((rot.T @ specific).astype(np.float32),
            (rot.T @ state_row["ang_vel_rad_s"]).astype(np.float32))


def imu_many(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`imu` of many robots at once: ``(n, 3)`` float32 accelerations and angular
    velocities from ``n`` state records, bit for bit :func:`imu`'s.

    Plain float arithmetic: for a handful of robots it is twice as fast as
    numpy's stacked matrices (whose per-call overhead dominates at n = 4).

    Example:
        >>> from dmxshm.world.state import ROBOT_STATE_DTYPE
        >>> s = np.zeros(2, ROBOT_STATE_DTYPE)
        >>> s["quat_xyzw"] = [0.0, 0.0, 0.0, 1.0]
        >>> s["ang_vel_rad_s"][1] = [0.0, 0.0, 0.5]
        >>> acc, gyro = imu_many(s)
        >>> acc[:, 2].tolist(), gyro[1].tolist()
        ([9.8100004196167, 9.8100004196167], [0.0, 0.0, 0.5])
    """
    acc, gyro = [], []
    g = GRAVITY_M_S2
    for (x, y, z, w), (ax, ay, az), (wx, wy, wz) in zip(
            rows["quat_xyzw"].tolist(), rows["lin_acc_m_s2"].tolist(),
            rows["ang_vel_rad_s"].tolist(), strict=True):
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = quat_matrix((x, y, z, w))
        ax, ay, az = ax + 0.0, ay + 0.0, az + g  # as imu's vector sum: -0.0 becomes 0.0
        # rot maps robot to world; its transpose (columns as rows) maps world to robot.
        # Each sum starts at 0.0 and adds in order, as numpy's matrix product does.
        acc.append((0.0 + r00 * ax + r10 * ay + r20 * az, 0.0 + r01 * ax + r11 * ay + r21 * az,
                    0.0 + r02 * ax + r12 * ay + r22 * az))
        gyro.append((0.0 + r00 * wx + r10 * wy + r20 * wz,
                     0.0 + r01 * wx + r11 * wy + r21 * wz,
                     0.0 + r02 * wx + r12 * wy + r22 * wz))
    return np.array(acc, np.float32).reshape(-1, 3), np.array(gyro, np.float32).reshape(-1, 3)


def encoders(state_row: np.void) -> np.ndarray:
    """Cumulative encoder ticks of the left and right wheel (int64, may be negative).

    Example:
        >>> from dmxshm.world.state import ROBOT_STATE_DTYPE
        >>> s = np.zeros((), ROBOT_STATE_DTYPE)
        >>> s["wheel_angle_rad"] = [2 * np.pi, -np.pi]
        >>> encoders(s)
        array([135, -68])
    """
    revolutions = state_row["wheel_angle_rad"] / (2 * math.pi)
    # A hair of slack so that exactly n revolutions reads n * 135, not one less.
    return np.floor(revolutions * ENCODER_TICKS_PER_REV + 1e-9).astype(np.int64)


def encoders_many(rows: np.ndarray) -> np.ndarray:
    """:func:`encoders` of many robots at once: ``(n, 2)`` int64 from ``n`` state records.

    Example:
        >>> from dmxshm.world.state import ROBOT_STATE_DTYPE
        >>> s = np.zeros(2, ROBOT_STATE_DTYPE)
        >>> s["wheel_angle_rad"][1] = [2 * np.pi, -np.pi]
        >>> encoders_many(s).tolist()
        [[0, 0], [135, -68]]
    """
    revolutions = rows["wheel_angle_rad"] / (2 * math.pi)
    return np.floor(revolutions * ENCODER_TICKS_PER_REV + 1e-9).astype(np.int64)


@dataclass(frozen=True)
class TimeOfFlight:
    """A forward range sensor: one ray along the robot's x axis.

    Args:
        max_range_m: the reading when nothing is hit.
        mount_m: ray origin in the robot frame.
    """

    max_range_m: float = 1.2
    mount_m: tuple[float, float, float] = TOF_MOUNT_M

    def measure(self, client: int, state_row: np.void) -> float:
        """Distance from the sensor to the first body ahead, m.

        Only collision shapes are hit (lane markings are visual only). The
        robot's own body is never seen: the ray starts outside its chassis
        and points away from it, and Bullet does not report a shape that a
        ray starts inside (so a mount inside the chassis is blind to it too).

        Args:
            client: pybullet client holding the scene and the robots.
            state_row: one :data:`~dmxshm.world.state.ROBOT_STATE_DTYPE` record.

        Returns:
            Range in m, ``max_range_m`` when nothing is within range.
        """
        return self.measure_pose(client, tuple(state_row["pos_m"].tolist()),
                                 quat_matrix(tuple(state_row["quat_xyzw"].tolist())))

    def measure_many(self, client: int, rows: np.ndarray) -> list[float]:
        """:meth:`measure` of many robots (state records), in one batch of rays."""
        starts, ends = [], []
        for pos, quat in zip(rows["pos_m"].tolist(), rows["quat_xyzw"].tolist(), strict=True):
            rot = quat_matrix(tuple(quat))
            starts.append(to_world(rot, pos, self.mount_m))
            ends.append(to_world(rot, pos, (self.mount_m[0] + self.max_range_m,
                                            *self.mount_m[1:])))
        hits = pb.rayTestBatch(starts, ends, numThreads=1, physicsClientId=client)
        return [self.max_range_m if hit[0] < 0 else hit[2] * self.max_range_m for hit in hits]

    def measure_pose(self, client: int, pos: tuple[float, ...],
                     rot: tuple[tuple[float, ...], ...]) -> float:
        """:meth:`measure` from the robot's position and rotation matrix (rows, plain floats)."""
        start = to_world(rot, pos, self.mount_m)
        end = to_world(rot, pos, (self.mount_m[0] + self.max_range_m, *self.mount_m[1:]))
        hit_id, _, fraction, _, _ = pb.rayTest(start, end, physicsClientId=client)[0]
        return self.max_range_m if hit_id < 0 else fraction * self.max_range_m
