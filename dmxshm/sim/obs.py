"""A robot's observation vectors, as views of one source: the observation record.

``DuckieLane-v0`` observes :data:`STATE_FIELDS` (11 floats), ``DuckieLane-v1``,
``parallel_env``, the batch's rows and ``connect_parallel`` observe
:data:`STATE_FIELDS_V1` (14 floats). Each is made here from the fields of a robot's
observation record (the network's, :func:`dmxshm.sim.sensing.obs_dtype`), so that one
robot in one state gives one vector whichever front-end it is driven through:

=================  ========================================  ==================
vector field       record field                              v0 / v1
=================  ========================================  ==================
lane_offset_m      ``lane[0]`` (NaN: 0)                      both
heading_err_rad    ``lane[1]`` (NaN: 0)                      both
speed_m_s          ``motion[0]``: forward speed              both
yaw_rate_rad_s     ``motion[1]``: yaw rate (world z)         both
acc_x .. acc_z     ``imu[0:3]``                              both
gyro_x .. gyro_z   ``imu[3:6]``                              both
tof_m              ``tof_m`` (v1: nothing in range reads     both
                   :data:`NO_TARGET_M`)
curvature_1_m      ``motion[2]``: the lane's curvature       v1
                   (NaN or infinite: 0)
turn               ``route[0]`` (NaN, none ahead: 0)         v1
turn_known         1 where ``route[0]`` is a turn, else 0    v1
=================  ========================================  ==================

Each vector is clipped to its bounds (:data:`STATE_LOW`, :data:`STATE_HIGH`,
:data:`STATE_LOW_V1`, :data:`STATE_HIGH_V1`).
"""

from __future__ import annotations

import numpy as np

from dmxshm.matrix.noise import DUCKIEBOT as DUCKIEBOT_NOISE

STATE_FIELDS = ("lane_offset_m", "heading_err_rad", "speed_m_s", "yaw_rate_rad_s",
                "acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z", "tof_m")
"""v0's state vector (``DuckieLane-v0``)."""
MORE_FIELDS = ("curvature_1_m", "turn", "turn_known")
"""The state vector's fields after v0's :data:`STATE_FIELDS` in v1."""
STATE_FIELDS_V1 = STATE_FIELDS + MORE_FIELDS
"""v1's state vector (``DuckieLane-v1``, ``parallel_env``, ``connect_parallel``)."""

STATE_HIGH = np.array([1.0, np.pi, 2.0, 20.0, 50.0, 50.0, 50.0, 20.0, 20.0, 20.0, 1.2],
                      dtype=np.float32)
"""v0's upper bounds (values are clipped into them)."""
STATE_LOW = -STATE_HIGH
STATE_LOW[-1] = 0.0
NO_TARGET_M = DUCKIEBOT_NOISE.tof.no_target_m
"""v1's time-of-flight reading with nothing within range (8.0 m, the driver's)."""
STATE_HIGH_V1 = np.concatenate([STATE_HIGH, np.array([10.0, 1.0, 1.0], np.float32)])
STATE_HIGH_V1[STATE_FIELDS.index("tof_m")] = NO_TARGET_M
STATE_LOW_V1 = np.concatenate([STATE_LOW, np.array([-10.0, -1.0, 0.0], np.float32)])

_TOF = STATE_FIELDS.index("tof_m")


def state_v1(records: np.ndarray, max_range_m: float) -> np.ndarray:
    """The v1 state vectors ``(n, 14)`` float32 of ``n`` observation records (with the
    ``motion`` field; ``route`` where the record has it, else no turn ahead).

    Args:
        records: observation records (:func:`dmxshm.sim.sensing.obs_dtype`).
        max_range_m: the time-of-flight's range: a reading of exactly this is nothing
            in range (a noiseless sensor's; a noisy one reads :data:`NO_TARGET_M`).
    """
    n = len(records)
    out = np.empty((n, len(STATE_FIELDS_V1)), np.float32)
    lane = records["lane"]
    motion = records["motion"]
    out[:, 0:2] = np.nan_to_num(lane[:, 0:2], nan=0.0)
    out[:, 2:4] = motion[:, 0:2]
    out[:, 4:10] = records["imu"]
    tof = records["tof_m"]
    out[:, _TOF] = np.where(tof == np.float32(max_range_m), np.float32(NO_TARGET_M), tof)
    curvature = motion[:, 2]
    out[:, 11] = np.where(np.isfinite(curvature), curvature, np.float32(0.0))
    if "route" in (records.dtype.names or ()):
        turn = records["route"][:, 0]
        known = ~np.isnan(turn)
        out[:, 12] = np.where(known, turn, np.float32(0.0))
        out[:, 13] = known
    else:
        out[:, 12:14] = 0.0
    return np.minimum(np.maximum(out, STATE_LOW_V1, out=out), STATE_HIGH_V1, out=out)
