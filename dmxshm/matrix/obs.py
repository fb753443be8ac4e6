"""The observation record of one robot, as a numpy structured dtype.

One record per robot per observation; renderers write them into the
observation rings and agents read them. Fields, in order (no padding, every
field naturally aligned):

===================  ==============  ==========================================
field                dtype           meaning
===================  ==============  ==========================================
``step``             uint64          engine step of the state this came from
``sim_time_s``       float64         simulated time of that state
``camera_time_s``    float64         when ``camera`` was last produced *
``imu_time_s``       float64         when ``imu`` was last produced
``encoders_time_s``  float64         when ``encoders`` was last produced
``tof_time_s``       float64         when ``tof_m`` was last produced
``encoders``         int64 (2,)      left, right cumulative ticks
``imu``              float32 (6,)    acceleration (3, m/s^2) then angular
                                     velocity (3, rad/s), robot frame
``tof_m``            float32         forward range, m
``lane``             float32 (3,)    pseudo-sensor, refreshed with every
                                     observation: lateral offset from the
                                     right-lane centre (m, + left), heading
                                     error (rad, + left), on-road flag (1/0);
                                     nan offset and heading far from roads
                                     (see ``RoadMap.lane_pose``)
``route``            float32 (2,)    pseudo-sensor with routes on (``--route``)
                                     only: the turn at the intersection ahead
                                     or under the robot (-1 left, 0 straight,
                                     1 right; nan none) and ``may_go`` (0 while
                                     it must wait at the stop line, else 1;
                                     :mod:`dmxshm.world.routes`) **
``motion``           float32 (3,)    pseudo-sensor, refreshed with every
                                     observation: forward speed (m/s), yaw
                                     rate (rad/s, world z) and the lane's
                                     curvature (1/m, + left; a turn's through
                                     an intersection; nan far from roads):
                                     with the sensors, what the state vectors
                                     of the envs hold (:mod:`dmxshm.sim.obs`)
``camera``           uint8 (H,W,3)   RGB image *
===================  ==============  ==========================================

Fields marked * exist only when the camera is enabled, ** only with routes. A sensor's time is
the simulated time at which it last produced; in realtime mode it lags
``sim_time_s`` by up to one sensor period, in gym mode it equals it. A
sensor that has not produced yet has time ``-1.0``.
"""

from __future__ import annotations

import numpy as np

from dmxshm.errors import DmxError

NEVER_S = -1.0
"""The time of a sensor that has not produced yet."""


class ObsLayoutError(DmxError, ValueError):
    """An observation layout was asked for with an impossible camera size."""


def obs_dtype(camera_wh: tuple[int, int] | None, route: bool = False) -> np.dtype:
    """The observation dtype for a camera of ``(width, height)``, or none.

    Args:
        camera_wh: ``(width, height)`` in pixels; ``None`` or ``(0, 0)``
            (the CLI's ``--camera 0x0``) leaves the camera out.
        route: add the ``route`` pseudo-sensor (a run with routes).

    Raises:
        ObsLayoutError: a negative size, or only one of the two is zero.

    Example:
        >>> obs_dtype((160, 120))["camera"].shape
        (120, 160, 3)
        >>> "camera" in obs_dtype(None).names, obs_dtype(None).itemsize
        (False, 108)
    """
    fields: list[tuple] = [("step", "<u8"), ("sim_time_s", "<f8")]
    camera = camera_wh is not None and tuple(camera_wh) != (0, 0)
    if camera_wh is not None:
        width, height = camera_wh
        if width < 0 or height < 0 or (camera and (width == 0 or height == 0)):
            raise ObsLayoutError(f"camera size {width}x{height}: both must be positive, "
                                 "or both 0 to disable the camera")
    if camera:
        fields.append(("camera_time_s", "<f8"))
    fields += [("imu_time_s", "<f8"), ("encoders_time_s", "<f8"), ("tof_time_s", "<f8"),
               ("encoders", "<i8", (2,)), ("imu", "<f4", (6,)), ("tof_m", "<f4"),
               ("lane", "<f4", (3,))]
    if route:
        fields.append(("route", "<f4", (2,)))
    fields.append(("motion", "<f4", (3,)))
    if camera:
        assert camera_wh is not None
        fields.append(("camera", "u1", (int(camera_wh[1]), int(camera_wh[0]), 3)))
    return np.dtype(fields)
