"""Where a sign's AprilTag truly is, seen from a robot's camera, and the frame an
AprilTag detector reads, as Duckietown's perception stack makes it.

Duckietown's AprilTag node (dt-core ``apriltag_detector_node``) rectifies each lens
image with the camera's calibration (OpenCV's ``getOptimalNewCameraMatrix`` with
``rectify_alpha`` 0, then ``remap``), turns it grey and gives the detector the
rectified camera's ``fx, fy, cx, cy`` and the tag's size (6.5 cm). The detector
returns the tag's pose in the camera's optical frame (x right, y down, z ahead):
``pose_t``, the tag's centre, and ``pose_R``, the tag's axes (x to the tag's right
and y down as printed, z into the sign). :func:`tag_pose` gives the same two for
the tag the renderer drew, so a detector's answer can be checked against the
truth (:func:`pose_error`); :func:`rectifier` makes the rectified frame.

Example:
    >>> import numpy as np
    >>> from dmxshm.matrix.camera import Camera
    >>> from dmxshm.world.objects import MapObject
    >>> from dmxshm.world.state import ROBOT_STATE_DTYPE
    >>> robot = np.zeros((), ROBOT_STATE_DTYPE)
    >>> robot["quat_xyzw"] = (0, 0, 0, 1)  # at the origin, facing +x
    >>> sign = MapObject("s", "sign_stop", 1.0, 0.0, np.pi, tag_id=1)  # facing it
    >>> t, R = tag_pose(sign, robot, Camera.duckiebot(640, 480, renderer="batch"))
    >>> (np.round(t, 3) + 0.0).tolist()  # centred, above the axis (it looks down), ahead
    [0.0, -0.354, 0.855]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dmxshm.matrix.batch_render import mount_basis
from dmxshm.matrix.lens import Remap, optimal_new_K, undistorter
from dmxshm.world import sign_faces
from dmxshm.world.state import rotation_matrices


def tag_pose(sign: Any, robot: np.ndarray, camera: Any) -> tuple[np.ndarray, np.ndarray]:
    """The pose of ``sign``'s tag in ``camera``'s optical frame, on a robot in state
    ``robot`` (a row of :data:`~dmxshm.world.state.ROBOT_STATE_DTYPE`), in the terms
    AprilTag detectors report it.

    Returns:
        ``(t, R)``: the tag's centre (m, shape ``(3,)``) and its axes as the columns
        of ``R`` (x to its right, y down, z into the sign), both in the camera's
        frame (x right, y down, z ahead).
    """
    cos, sin = math.cos(sign.yaw_rad), math.sin(sign.yaw_rad)
    to_world = np.array([[cos, -sin, 0.0], [sin, cos, 0.0], [0.0, 0.0, 1.0]])
    centre = to_world @ [sign_faces.FRONT_M, 0.0, sign_faces.TAG_CENTRE_M]
    centre += [sign.x_m, sign.y_m, 0.0]
    # seen from the front (the sign's +x), the tag's right is the sign's +y
    axes = to_world @ np.array([[0.0, 0.0, -1.0], [1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    body = rotation_matrices(np.asarray(robot["quat_xyzw"], np.float64))
    eye = np.asarray(robot["pos_m"], np.float64) + body @ np.asarray(camera.mount_m)
    frame = body @ mount_basis(camera.tilt_deg)  # the camera's axes in the world
    return frame.T @ (centre - eye), frame.T @ axes


def robot_facing(sign: Any, camera: Any, distance_m: float, off_normal_rad: float = 0.0,
                 turn_rad: float = 0.0) -> tuple[float, float, float]:
    """A robot's pose ``(x, y, yaw)`` whose camera is ``distance_m`` from ``sign``'s
    tag (horizontally), ``off_normal_rad`` round from straight in front of it, the
    robot facing the sign but turned ``turn_rad`` away from it."""
    heading = sign.yaw_rad + off_normal_rad  # from the sign towards the camera
    cx = sign.x_m + sign_faces.FRONT_M * math.cos(sign.yaw_rad) + distance_m * math.cos(heading)
    cy = sign.y_m + sign_faces.FRONT_M * math.sin(sign.yaw_rad) + distance_m * math.sin(heading)
    yaw = heading + math.pi + turn_rad
    forward = camera.mount_m[0]
    return cx - forward * math.cos(yaw), cy - forward * math.sin(yaw), yaw


def pose_error(t: np.ndarray, R: np.ndarray, t_est: np.ndarray,
               R_est: np.ndarray) -> tuple[float, float]:
    """How far an estimated pose is from the true one: the distance between the
    centres (m) and the angle of the rotation between the two orientations (deg)."""
    d = float(np.linalg.norm(np.ravel(t_est) - np.ravel(t)))
    c = (float(np.trace(np.asarray(R).T @ np.asarray(R_est))) - 1) / 2
    return d, math.degrees(math.acos(min(1.0, max(-1.0, c))))


def rectifier(camera: Any, alpha: float = 0.0) -> tuple[Remap, tuple[float, ...]]:
    """How a lens camera's images are rectified for an AprilTag detector, as
    Duckietown's AprilTag node does: the :class:`~dmxshm.matrix.lens.Remap` to the
    rectified image and that image's ``(fx, fy, cx, cy)``, the detector's
    ``camera_params``. (The AprilTag library's pixel centres sit at ``i + 0.5``, as
    this project's do: on ideal frames at 0.6 m the tag's centre came out 0.1 mm off
    sideways so, and 1.2 mm with ``cx`` moved half a pixel; scripts/bench_tags.py.)

    Raises:
        ValueError: ``camera`` has no lens (a pinhole camera's images need none).
    """
    if camera.lens is None:
        raise ValueError("a pinhole camera's images are not rectified: give the detector "
                         "its own intrinsics")
    k = optimal_new_K(camera.lens, alpha)
    return undistorter(camera.lens, k), (k[0], k[4], k[2], k[5])


__all__ = ["pose_error", "rectifier", "robot_facing", "tag_pose"]
