"""The forward camera: pybullet's CPU renderer from the robot's camera pose.

ER_TINY_RENDERER needs no display and no GPU and gives the same pixels on
every run. Its cost grows with the screen area of each triangle's bounding
box (a 160x120 view of the road costs ~3.5 ms, a 64x64 one ~1 ms, an empty
scene ~0.5 ms) and with the number of shapes, which is why the scene merges
its geometry into a few meshes (:mod:`dmxshm.world.scene`).

pybullet returns RGBA; dropping alpha with ``rgba[..., :3].copy()`` (or
``np.ascontiguousarray``) walks a 4-byte stride per byte and costs ~85 us
at 160x120, while three per-channel copies cost ~17 us (measured, numpy 2.4),
so :meth:`Camera.render` copies channel by channel, straight into the
caller's buffer (an observation slot) when one is given.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmxshm._pybullet import pb
from dmxshm.errors import DmxError
from dmxshm.matrix.lens import (
    DUCKIEBOT,
    DUCKIEBOT_FORWARD_M,
    DUCKIEBOT_MOUNT_HEIGHT_M,
    DUCKIEBOT_TILT_DEG,
    Calibration,
    LensMap,
)
from dmxshm.world.maps import RoadMap
from dmxshm.world.renderers import flag
from dmxshm.world.robot import CHASSIS_FRONT_X_M, WHEEL_RADIUS_M
from dmxshm.world.world import World

CAMERA_MOUNT_M = (CHASSIS_FRONT_X_M + 0.005, 0.0, 0.07)
"""Camera position in the robot frame: just ahead of the chassis front, about
10 cm above the ground (the robot frame is one wheel radius up)."""

CAMERA_TILT_DEG = 20.0
"""The camera looks this much below the horizontal."""

CAMERA_MODELS = ("pinhole", "duckiebot")
"""What ``camera_model`` (``--camera duckiebot``) may be."""

LOOKS = ("flat", "duckietown")
"""How a camera's world is drawn (``look``, ``--look``): ``flat``, every renderer's
(every part one colour, a white background; the default, and what digests pinned
before the looks were drawn in); ``duckietown``, the batch renderer's Duckietown
(signs with their symbol and tag36h11 AprilTag, the markings in the line detector's
colours, a ground lit from above with a grain, a floor, a sky: docs/renderers.md)."""

LIGHT_DIRECTION = (0.4, 0.3, 1.0)
"""Direction towards the light (fixed, so images do not depend on defaults)."""


class CameraError(DmxError, ValueError):
    """A camera was configured with an impossible size or projection."""


def quat_matrix(q: tuple[float, float, float, float]) -> tuple[tuple[float, ...], ...]:
    """Rows of the rotation matrix of one unit quaternion ``(x, y, z, w)``.

    Plain floats: for one robot, this is ~10x faster than numpy.
    """
    x, y, z, w = q
    return ((1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
            (2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
            (2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)))


def to_world(rot: tuple[tuple[float, ...], ...], pos: tuple[float, ...],
             local: tuple[float, ...]) -> tuple[float, float, float]:
    """``pos + rot @ local`` with plain floats."""
    return (pos[0] + rot[0][0] * local[0] + rot[0][1] * local[1] + rot[0][2] * local[2],
            pos[1] + rot[1][0] * local[0] + rot[1][1] * local[1] + rot[1][2] * local[2],
            pos[2] + rot[2][0] * local[0] + rot[2][1] * local[1] + rot[2][2] * local[2])


@dataclass
class Camera:
    """A pinhole camera mounted on the robot, looking forward and down.

    With ``lens`` (a :class:`~dmxshm.matrix.lens.Calibration`), the image is what
    that lens gives: the renderer draws a wider pinhole image and it is remapped
    through the lens model (:class:`~dmxshm.matrix.lens.LensMap`); ``fov_deg`` is
    then the lens's, not used. :meth:`duckiebot` makes the Duckiebot's camera.

    Args:
        width: image width, pixels.
        height: image height, pixels.
        fov_deg: vertical field of view (a pinhole camera).
        near_m: near clipping plane.
        far_m: far clipping plane.
        tilt_deg: angle below the horizontal.
        mount_m: position in the robot frame.
        renderer: ``"tiny"`` or ``"egl"`` (the world must have been built for
            it: :class:`~dmxshm.world.world.World` ``renderer=``).
        lens: a lens calibration (scaled to ``width`` x ``height`` if it is for
            another size), or None for a pinhole camera.
        lens_oversample: pinhole pixels per lens pixel at the image centre.
        light_direction: towards the light (None: :data:`LIGHT_DIRECTION`).
        look: how the world is drawn (:data:`LOOKS`); ``duckietown`` with the batch
            renderer only.
    """

    width: int = 160
    height: int = 120
    fov_deg: float = 60.0
    near_m: float = 0.01
    far_m: float = 12.0
    tilt_deg: float = CAMERA_TILT_DEG
    mount_m: tuple[float, float, float] = CAMERA_MOUNT_M
    renderer: str = "tiny"
    lens: Calibration | None = None
    lens_oversample: float = 1.0
    light_direction: tuple[float, float, float] | None = None
    look: str = "flat"
    _projection: tuple[float, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise CameraError(f"camera size must be at least 1x1, not {self.width}x{self.height}")
        if not (0 < self.fov_deg < 180 and 0 < self.near_m < self.far_m):
            raise CameraError(f"camera needs 0 < fov_deg < 180 and 0 < near_m < far_m, got "
                              f"fov {self.fov_deg}, near {self.near_m}, far {self.far_m}")
        if self.look not in LOOKS:
            raise CameraError(f"look must be one of {', '.join(LOOKS)}, not {self.look!r}")
        if self.look != "flat" and self.renderer != "batch":
            raise CameraError(f"the {self.look} look is drawn by the batch renderer only "
                              f"(tiny and EGL draw the flat look), not {self.renderer}: "
                              "use the batch renderer")
        self._lens_map: LensMap | None = None
        self._render_wh = (self.width, self.height)
        if self.lens is not None:
            if (self.lens.width, self.lens.height) != (self.width, self.height):
                self.lens = self.lens.scaled(self.width, self.height)
            self._lens_map = LensMap(self.lens, self.lens_oversample)
            self._render_wh = self._lens_map.pinhole_wh
            n = self.near_m
            left, right, bottom, top = self._lens_map.frustum
            self._projection = pb.computeProjectionMatrix(
                left * n, right * n, bottom * n, top * n, n, self.far_m)
        else:
            self._projection = pb.computeProjectionMatrixFOV(
                self.fov_deg, self.width / self.height, self.near_m, self.far_m)
        self._flag = flag(self.renderer)
        self._aim()

    def _aim(self) -> None:
        tilt = math.radians(self.tilt_deg)
        self._forward = (math.cos(tilt), 0.0, -math.sin(tilt))
        self._up = (math.sin(tilt), 0.0, math.cos(tilt))

    def jittered(self, height_m: float = 0.0, tilt_deg: float = 0.0, focal_scale: float = 1.0,
                 light_azimuth_deg: float = 0.0) -> Camera:
        """This camera moved up by ``height_m``, tilted down by ``tilt_deg`` more, its
        focal length scaled by ``focal_scale`` (the lens's ``K``, or the pinhole's field
        of view) and its light turned by ``light_azimuth_deg`` about the vertical
        (domain randomisation, :mod:`dmxshm.world.randomize`). With the focal length
        kept, the lens map (its remap tables) and the projection are shared with
        this camera instead of built again."""
        x, y, z = self.mount_m
        lx, ly, lz = self.light_direction or LIGHT_DIRECTION
        a = math.radians(light_azimuth_deg)
        light = (lx * math.cos(a) - ly * math.sin(a), lx * math.sin(a) + ly * math.cos(a), lz)
        lens, fov = self.lens, self.fov_deg
        if lens is not None and focal_scale != 1.0:
            k = list(lens.K)
            k[0], k[4] = k[0] * focal_scale, k[4] * focal_scale
            lens = Calibration(lens.model, tuple(k), lens.D, lens.width, lens.height,
                               f"{lens.source}, focal length x{focal_scale:.4f}")
        elif focal_scale != 1.0:
            half = math.tan(math.radians(fov) / 2) / focal_scale
            fov = math.degrees(2 * math.atan(half))
        else:  # the same lens and projection: only where it looks from, and the light
            moved = copy.copy(self)
            moved.tilt_deg, moved.mount_m = self.tilt_deg + tilt_deg, (x, y, z + height_m)
            moved.light_direction = light
            moved._aim()
            return moved
        return Camera(self.width, self.height, fov, self.near_m, self.far_m,
                      self.tilt_deg + tilt_deg, (x, y, z + height_m), self.renderer, lens,
                      self.lens_oversample, light, self.look)

    @classmethod
    def duckiebot(cls, width: int = 640, height: int = 480, renderer: str = "tiny",
                  calibration: Calibration | None = None, look: str = "flat") -> Camera:
        """The Duckiebot's camera: its lens (:data:`~dmxshm.matrix.lens.DUCKIEBOT`
        unless ``calibration`` is given), its height and tilt on the robot.

        Example:
            >>> cam = Camera.duckiebot(64, 48)
            >>> cam.shape, cam.lens.width, round(cam.tilt_deg, 2)
            ((48, 64, 3), 64, 19.15)
        """
        return cls(width, height, renderer=renderer, lens=calibration or DUCKIEBOT,
                   tilt_deg=DUCKIEBOT_TILT_DEG,
                   mount_m=(DUCKIEBOT_FORWARD_M, 0.0, DUCKIEBOT_MOUNT_HEIGHT_M - WHEEL_RADIUS_M),
                   look=look)

    @classmethod
    def of_model(cls, model: str, width: int, height: int, renderer: str = "tiny",
                 look: str = "flat") -> Camera:
        """A camera of one of :data:`CAMERA_MODELS`: ``pinhole`` (dmxshm's 60-degree
        camera) or ``duckiebot`` (:meth:`duckiebot`), drawing ``look``."""
        if model == "duckiebot":
            return cls.duckiebot(width, height, renderer, look=look)
        if model != "pinhole":
            raise CameraError(f"camera model {model!r}: one of {', '.join(CAMERA_MODELS)}")
        return cls(width, height, renderer=renderer, look=look)

    @property
    def calibration(self) -> dict[str, Any] | None:
        """The lens's calibration as the summary, the log and the env's ``info`` give
        it (``{model, K, D, width, height, source}``), or None for a pinhole camera."""
        return None if self.lens is None else self.lens.to_dict()

    @property
    def render_wh(self) -> tuple[int, int]:
        """The size the renderer draws: the image's, or the wider pinhole image a lens
        camera remaps."""
        return self._render_wh

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(height, width, 3)`` of the images."""
        return self.height, self.width, 3

    def view_matrix(self, state_row: np.void) -> tuple[float, ...]:
        """The OpenGL view matrix of the camera on a robot in ``state_row``."""
        pos = tuple(state_row["pos_m"].tolist())
        rot = quat_matrix(tuple(state_row["quat_xyzw"].tolist()))
        eye = to_world(rot, pos, self.mount_m)
        target = to_world(rot, eye, self._forward)
        up = to_world(rot, (0.0, 0.0, 0.0), self._up)
        return pb.computeViewMatrix(eye, target, up)

    def render(self, client: int, state_row: np.void, out: np.ndarray | None = None) -> np.ndarray:
        """Render what the robot in ``state_row`` sees.

        Args:
            client: pybullet client holding the scene and the robots.
            state_row: one record of
                :data:`~dmxshm.world.state.ROBOT_STATE_DTYPE`.
            out: optional ``(height, width, 3)`` uint8 array to fill.

        Returns:
            ``out``, or a new array: RGB, uint8, rows top to bottom.
        """
        if self.renderer == "batch":
            raise CameraError("a batch camera is drawn with the others of its process by "
                              "dmxshm.matrix.batch_render.BatchRenderer, not one by one in "
                              "pybullet")
        rw, rh = self._render_wh
        args = (rw, rh, self.view_matrix(state_row), self._projection)
        kw = dict(lightDirection=self.light_direction or LIGHT_DIRECTION, shadow=0,
                  renderer=self._flag,
                  flags=pb.ER_NO_SEGMENTATION_MASK, physicsClientId=client)
        _, _, rgba, _, _ = pb.getCameraImage(*args, **kw)
        rgba = np.asarray(rgba, dtype=np.uint8).reshape(rh, rw, 4)
        if self._lens_map is not None:
            return self._lens_map.remap(rgba, out)
        if out is None:
            out = np.empty(self.shape, np.uint8)
        out[..., 0] = rgba[..., 0]
        out[..., 1] = rgba[..., 1]
        out[..., 2] = rgba[..., 2]
        return out


def top_view(road_map: RoadMap, width_px: int = 480, robots: int = 0,
             seed: int = 0) -> np.ndarray:
    """The map from straight above, as dmxshm's own renderer draws it (RGB, uint8).

    With ``robots``, they stand at the start poses of ``seed``. A narrow field of
    view from high up keeps the perspective nearly flat.

    Example:
        >>> from dmxshm.world.maps import load_map
        >>> top_view(load_map("loop"), width_px=60).shape
        (50, 60, 3)
    """
    width_m, height_m = road_map.size_m
    height_px = max(1, round(width_px * height_m / width_m))
    fov_deg = 10.0
    # High enough that the map's north-south extent just fills the image.
    altitude_m = (height_m / 2) / math.tan(math.radians(fov_deg / 2))
    cx, cy = width_m / 2, height_m / 2
    with World(road_map, robots, seed=seed) as world:
        view = pb.computeViewMatrix((cx, cy, altitude_m), (cx, cy, 0.0), (0.0, 1.0, 0.0))
        projection = pb.computeProjectionMatrixFOV(fov_deg, width_px / height_px,
                                                   altitude_m - 1.0, altitude_m + 1.0)
        _, _, rgba, _, _ = pb.getCameraImage(
            width_px, height_px, view, projection, lightDirection=LIGHT_DIRECTION, shadow=0,
            renderer=pb.ER_TINY_RENDERER, flags=pb.ER_NO_SEGMENTATION_MASK,
            physicsClientId=world.client)
    return np.ascontiguousarray(
        np.asarray(rgba, dtype=np.uint8).reshape(height_px, width_px, 4)[..., :3])
