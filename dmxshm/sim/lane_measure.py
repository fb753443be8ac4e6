"""A DuckieLane env's step after the physics, for many envs at once (compiled): the
state vector (:meth:`DuckieLaneEnv._measure <dmxshm.batch.env.DuckieLaneEnv._measure>`),
v1's sensors (:func:`~dmxshm.batch.env_v1.sense_v1`, the IMU's noise from the
:class:`~dmxshm.matrix.noise.Noise` blocks the caller keeps), the reward and the flags
(:func:`~dmxshm.world.scoring.lane_score`), in the Python code's expressions and order,
so that the rows are the same floats as the env's own (``tests/batch/
test_array_shard.py``).

Serves envs whose time of flight sees nothing (one robot on a map without objects:
the clean range is the sensor's maximum, every step).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dmxshm.world.world import GRAVITY_M_S2

TOF_FIELD, ACC_FIELD = 10, 4  # STATE_FIELDS' tof_m and acc_x
TURN_CODES = np.array([-1.0, 0.0, 1.0])  # a route row's turn (-1, 0, 1) as TURN_CODE's


@njit(cache=True, error_model="numpy")
def _clip(v: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:  # pragma: no cover
    """np.minimum(np.maximum(v, low), high) in place (NaN kept, as numpy's)."""
    for j in range(v.shape[0]):
        a = v[j]
        if a == a:  # (NaN stays)
            if low[j] > a:
                a = low[j]
            if high[j] < a:
                a = high[j]
        v[j] = a


@njit(cache=True, error_model="numpy")
def _vector(r: np.ndarray, lane: np.ndarray, route: np.ndarray, routed: bool, v1: bool,
            tof_m: float, vector: np.ndarray) -> float:  # pragma: no cover (compiled)
    """The exact state vector of a robot (its state record ``r``, its lane row, route
    row and clean range ``tof_m``) into ``vector``, unclipped; returns its forward
    speed."""
    qx, qy, qz, qw = r[3], r[4], r[5], r[6]
    vx, vy, vz, wx, wy, wz = r[7], r[8], r[9], r[10], r[11], r[12]
    ax, ay, az = r[13], r[14], r[15]
    r00, r01, r02 = 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), \
        2 * (qx * qz + qy * qw)
    r10, r11, r12 = 2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), \
        2 * (qy * qz - qx * qw)
    r20, r21, r22 = 2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), \
        1 - 2 * (qx * qx + qy * qy)
    offset, heading, curvature = lane[0], lane[1], lane[3]
    speed = r00 * vx + r10 * vy + r20 * vz
    az = az + GRAVITY_M_S2
    vector[0] = 0.0 if offset != offset else offset
    vector[1] = 0.0 if heading != heading else heading
    vector[2] = speed
    vector[3] = wz
    vector[4] = r00 * ax + r10 * ay + r20 * az
    vector[5] = r01 * ax + r11 * ay + r21 * az
    vector[6] = r02 * ax + r12 * ay + r22 * az
    vector[7] = r00 * wx + r10 * wy + r20 * wz
    vector[8] = r01 * wx + r11 * wy + r21 * wz
    vector[9] = r02 * wx + r12 * wy + r22 * wz
    vector[10] = tof_m
    if v1:
        c = curvature
        vector[11] = 0.0 if c != c or math.isinf(c) else c
        known = routed and route[0] == 1
        vector[12] = TURN_CODES[route[5] + 1] if known else 0.0
        vector[13] = 1.0 if known else 0.0
    return speed


@njit(cache=True, error_model="numpy")
def _imu_noise(vector: np.ndarray, k: int, dt: float, white: np.ndarray,
               turn_on: np.ndarray, walk: np.ndarray) -> None:  # pragma: no cover
    """The IMU's noise at step ``k`` added to ``vector``'s six IMU fields
    (:meth:`Noise.imu <dmxshm.matrix.noise.Noise.imu>`: white noise, and the bias's
    turn-on and walk between its knots)."""
    t = max(k * dt, 0.0) / 1.0
    j = int(t)
    frac = t - j
    for a in range(6):
        bias = turn_on[a] + walk[j, a] * (1.0 - frac) + walk[j + 1, a] * frac
        clean = float(vector[ACC_FIELD + a])
        vector[ACC_FIELD + a] = clean + (white[a] + bias)


@njit(cache=True, error_model="numpy")
def measure(records: np.ndarray, lanes: np.ndarray, route: np.ndarray, routed: bool,
            v1: bool, steps: np.ndarray, dt: float, tof_m: float, noisy: np.ndarray,
            white: np.ndarray, turn_on: np.ndarray, walk: np.ndarray,
            no_target: np.ndarray, low: np.ndarray, high: np.ndarray,
            offset_penalty: float, max_steps: int, obs: np.ndarray, rewards: np.ndarray,
            terminated: np.ndarray, truncated: np.ndarray, offsets: np.ndarray,
            on_road: np.ndarray, progress: np.ndarray) -> None:  # pragma: no cover
    """Row ``i`` of every output from env ``i``'s state record (``records`` (n, 20)), lane
    (``lanes`` (n, 4): offset, heading error, on road, curvature), route row (``route``,
    :data:`~dmxshm.sim.lane_kernels.ROUTE_FIELDS`; ``routed`` False: no routes) and step
    count after the step (``steps``). ``v1``: v1's vector and sensors (``noisy[i]``: env
    ``i`` reads with noise: its IMU white noise of this step in ``white`` (n, 6), its
    bias's turn-on in ``turn_on`` (n, 6) and walk knots in ``walk`` (n, K, 6))."""
    n_fields = obs.shape[1]
    vector = np.empty(n_fields, np.float32)
    for i in range(records.shape[0]):
        offset, heading, on = lanes[i, 0], lanes[i, 1], lanes[i, 2] > 0.5
        speed = _vector(records[i], lanes[i], route[i], routed, v1, tof_m, vector)
        _clip(vector, low, high)
        k = steps[i]
        if v1:
            hit = vector[TOF_FIELD] < tof_m
            if not noisy[i]:
                if not hit:
                    vector[TOF_FIELD] = no_target[i]
            else:
                _imu_noise(vector, k, dt, white[i], turn_on[i], walk[i])
                if not hit:  # (with nothing in range, no draw)
                    vector[TOF_FIELD] = no_target[i]
            _clip(vector, low, high)
        for j in range(n_fields):  # (an element loop: a slice assignment compiles slowly)
            obs[i, j] = vector[j]
        h = 0.0 if heading != heading else heading
        o = 0.0 if offset != offset else offset
        p = speed * math.cos(h) * dt
        rewards[i] = p - offset_penalty * abs(o) * dt - 0.0
        terminated[i] = not on
        truncated[i] = max_steps > 0 and k >= max_steps
        offsets[i], on_road[i], progress[i] = offset, on, p


@njit(cache=True, error_model="numpy")
def measure_multi(records: np.ndarray, lanes: np.ndarray, route: np.ndarray, routed: bool,
                  steps: np.ndarray, dt: float, ranges: np.ndarray, tof_m: float,
                  noisy: np.ndarray, white: np.ndarray, turn_on: np.ndarray,
                  walk: np.ndarray, tof_z: np.ndarray, tof_model: np.ndarray,
                  no_target: np.ndarray, low: np.ndarray, high: np.ndarray,
                  offset_penalty: float, collision_penalty: float, end_on_collision: bool,
                  collided: np.ndarray, max_steps: int, obs: np.ndarray,
                  rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
                  offsets: np.ndarray, on_road: np.ndarray,
                  progress: np.ndarray) -> None:  # pragma: no cover (compiled)
    """:func:`measure` for the robots of multi-robot worlds (:meth:`MultiLane._measure
    <dmxshm.batch.lanes.MultiLane._measure>` and its scoring), row ``i`` a live robot:
    its clean range ``ranges[i]`` (the other robots seen), the range's noise (its normal
    of this step ``tof_z[i]``; ``tof_model[i]``: sigma, sigma per metre, the model's
    maximum range), whether a contact began for it in the step (``collided``), and its
    world's step count after the step (``steps``). The vector is clipped once, after
    the sensors (as v1's :func:`~dmxshm.batch.env_v1.sense_v1`)."""
    n_fields = obs.shape[1]
    vector = np.empty(n_fields, np.float32)
    for i in range(records.shape[0]):
        offset, heading, on = lanes[i, 0], lanes[i, 1], lanes[i, 2] > 0.5
        speed = _vector(records[i], lanes[i], route[i], routed, True, ranges[i], vector)
        k = steps[i]
        hit = vector[TOF_FIELD] < tof_m
        if not noisy[i]:
            if not hit:
                vector[TOF_FIELD] = no_target[i]
        else:
            _imu_noise(vector, k, dt, white[i], turn_on[i], walk[i])
            range_m = float(vector[TOF_FIELD])
            if not hit or range_m > tof_model[i, 2]:
                vector[TOF_FIELD] = no_target[i]
            else:
                v = range_m + tof_z[i] * (tof_model[i, 0] + tof_model[i, 1] * range_m)
                vector[TOF_FIELD] = v if v > 0.0 else 0.0
        _clip(vector, low, high)
        for j in range(n_fields):
            obs[i, j] = vector[j]
        h = 0.0 if heading != heading else heading
        o = 0.0 if offset != offset else offset
        p = speed * math.cos(h) * dt
        hit_now = collided[i]
        rewards[i] = p - offset_penalty * abs(o) * dt - (collision_penalty if hit_now else 0.0)
        terminated[i] = (not on) or (hit_now and end_on_collision)
        truncated[i] = max_steps > 0 and k >= max_steps and not terminated[i]
        offsets[i], on_road[i], progress[i] = offset, on, p
