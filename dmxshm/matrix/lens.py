"""The Duckiebot's camera: a wide-angle lens with radial and tangential distortion.

A :class:`Calibration` is what a Duckietown perception stack reads from the robot
(``camera_intrinsic/HOSTNAME.yaml``): the model (``plumb_bob``, OpenCV's five
coefficients ``k1, k2, p1, p2, k3``), the intrinsic matrix ``K`` and the image size.
:data:`DUCKIEBOT` is Duckietown's default calibration, the one a Duckiebot's camera
node falls back to without its own, published in duckietown/Software
(``catkin_ws/src/07-image-processing/pi_camera/include/pi_camera/camera_info.py``,
branches master18 and master19): 640x480, ``fx`` 305.57, ``fy`` 308.83, ``cx``
303.08, ``cy`` 231.88, ``k1`` -0.2945, ``k2`` 0.0701. (gym-duckietown's
``Distortion`` uses the same ``K`` with a milder ``k1 = -0.2, k2 = 0.0305``.)

How a lens image is made (:class:`LensMap`): the renderer draws a pinhole image
wide enough to hold every ray the lens sees (an off-centre frustum, since the
principal point is off the centre), at the lens's own focal length, so the
image's centre keeps the calibration's resolution; each pixel of the lens image
then takes the bilinear blend of the four pinhole pixels around where its ray
lands. The ray of a lens pixel is found once, by inverting the distortion
(Newton's method on the normalised coordinates, as OpenCV's ``undistortPoints``
iterates), so a frame costs one gather of four neighbours per pixel.

The camera's pose on the robot (:data:`DUCKIEBOT_MOUNT_HEIGHT_M`,
:data:`DUCKIEBOT_TILT_DEG`, :data:`DUCKIEBOT_FORWARD_M`) is gym-duckietown's
(``CAMERA_FLOOR_DIST``, ``CAMERA_ANGLE``, ``CAMERA_FORWARD_DIST``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DUCKIEBOT_MOUNT_HEIGHT_M = 0.108
"""The camera's height above the floor (gym-duckietown's ``CAMERA_FLOOR_DIST``)."""

DUCKIEBOT_TILT_DEG = 19.15
"""How far the camera looks below the horizontal (gym-duckietown's ``CAMERA_ANGLE``)."""

DUCKIEBOT_FORWARD_M = 0.066
"""The camera ahead of the axle (gym-duckietown's ``CAMERA_FORWARD_DIST``)."""


@dataclass(frozen=True)
class Calibration:
    """A camera calibration as Duckietown stores it.

    Attributes:
        model: the distortion model (``"plumb_bob"``).
        K: the 3x3 intrinsic matrix, row by row (9 numbers).
        D: the distortion coefficients ``k1, k2, p1, p2, k3``.
        width, height: the image size the calibration is for.
        source: where the numbers come from.
    """

    model: str
    K: tuple[float, ...]
    D: tuple[float, ...]
    width: int
    height: int
    source: str

    def __post_init__(self) -> None:
        if self.model != "plumb_bob":
            raise ValueError(f"lens model {self.model!r} is not supported (plumb_bob only)")
        if len(self.K) != 9 or len(self.D) != 5:
            raise ValueError("a calibration needs 9 numbers of K and 5 of D")

    @property
    def fx(self) -> float:
        return self.K[0]

    @property
    def fy(self) -> float:
        return self.K[4]

    @property
    def cx(self) -> float:
        return self.K[2]

    @property
    def cy(self) -> float:
        return self.K[5]

    def scaled(self, width: int, height: int) -> Calibration:
        """The same lens for an image of another size (``K`` scaled, ``D`` kept), as a
        camera driver that bins its sensor reports it.

        Example:
            >>> DUCKIEBOT.scaled(320, 240).K[:3]
            (152.78594467875445, 0.0, 151.5398571272364)
        """
        sx, sy = width / self.width, height / self.height
        k = list(self.K)
        k[0], k[2], k[4], k[5] = k[0] * sx, k[2] * sx, k[4] * sy, k[5] * sy
        return Calibration(self.model, tuple(k), self.D, width, height,
                           f"{self.source}, scaled to {width}x{height}")

    def to_dict(self) -> dict[str, Any]:
        """The summary's, the log's and the env's ``calibration``."""
        return {"model": self.model, "K": list(self.K), "D": list(self.D),
                "width": self.width, "height": self.height, "source": self.source}

    def distort(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Normalised undistorted coordinates to normalised distorted ones (OpenCV's
        plumb_bob: radial ``k1, k2, k3`` and tangential ``p1, p2``)."""
        k1, k2, p1, p2, k3 = self.D
        r2 = x * x + y * y
        radial = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
        xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
        yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
        return xd, yd

    def undistort(self, xd: np.ndarray, yd: np.ndarray,
                  iterations: int = 30) -> tuple[np.ndarray, np.ndarray]:
        """Invert :meth:`distort` by Newton's method (a numeric Jacobian, every point
        at once); exact to about 1e-12 inside the calibrated image."""
        x, y = xd.astype(np.float64).copy(), yd.astype(np.float64).copy()
        h = 1e-7
        for _ in range(iterations):
            fx, fy = self.distort(x, y)
            ex, ey = fx - xd, fy - yd
            ax, ay = self.distort(x + h, y)
            bx, by = self.distort(x, y + h)
            j11, j21 = (ax - fx) / h, (ay - fy) / h
            j12, j22 = (bx - fx) / h, (by - fy) / h
            det = j11 * j22 - j12 * j21
            x = x - (j22 * ex - j12 * ey) / det
            y = y - (-j21 * ex + j11 * ey) / det
        return x, y

    def pixel_rays(self) -> tuple[np.ndarray, np.ndarray]:
        """The undistorted normalised coordinates ``(x, y)`` of every pixel centre, each
        ``(height, width)``, read-only: the ray through pixel ``(u, v)`` is ``(x, y, 1)``.
        Kept for the last few calibrations asked (a 640x480 lens's took 0.65 s here, and
        a camera's lens map and the batch renderer's rays both ask)."""
        return _pixel_rays(self.K, self.D, self.width, self.height)


@functools.lru_cache(maxsize=8)
def _pixel_rays(K: tuple[float, ...], D: tuple[float, ...], width: int,
                height: int) -> tuple[np.ndarray, np.ndarray]:
    cal = Calibration("plumb_bob", K, D, width, height, "")
    u, v = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
    x, y = cal.undistort((u - cal.cx) / cal.fx, (v - cal.cy) / cal.fy)
    x.flags.writeable = False
    y.flags.writeable = False
    return x, y


DUCKIEBOT = Calibration(
    "plumb_bob",
    (305.5718893575089, 0.0, 303.0797142544728,
     0.0, 308.8338858195428, 231.8845403702499,
     0.0, 0.0, 1.0),
    (-0.2944667743901807, 0.0701431287084318, 0.0005859930422629722,
     -0.0006697840226199427, 0.0),
    640, 480,
    "Duckietown's default Duckiebot camera calibration (duckietown/Software, "
    "07-image-processing/pi_camera/include/pi_camera/camera_info.py)")
"""Duckietown's default calibration of the Duckiebot's camera, 640x480."""


class Remap:
    """A fixed warp of one image into another: each output pixel the bilinear blend of
    the four source pixels around a given point, in 1/256 steps.

    Args:
        px, py: for each output pixel (an ``(h, w)`` array each), where it samples the
            source, in source pixel coordinates (pixel centres at integers).
        source_wh: the source image's size.
    """

    def __init__(self, px: np.ndarray, py: np.ndarray, source_wh: tuple[int, int]) -> None:
        w, h = source_wh
        self.shape = px.shape
        self.source_wh = source_wh
        x0 = np.clip(np.floor(px).astype(np.int64), 0, w - 2)
        y0 = np.clip(np.floor(py).astype(np.int64), 0, h - 2)
        fx_, fy_ = np.clip(px - x0, 0, 1), np.clip(py - y0, 0, 1)
        base = (y0 * w + x0).ravel()
        self._index = np.stack([base, base + 1, base + w, base + w + 1]).astype(np.intp)
        # Weights in 1/256 that sum to 256 exactly: a blend of bytes stays in 16 bits.
        wts = np.stack([(1 - fx_) * (1 - fy_), fx_ * (1 - fy_), (1 - fx_) * fy_,
                        fx_ * fy_]).reshape(4, -1)
        q = np.floor(wts * 256).astype(np.int64)
        short = 256 - q.sum(axis=0)  # what flooring lost, given to the largest weight
        q[np.argmax(wts, axis=0), np.arange(q.shape[1])] += short
        self._weight = q.astype(np.uint32)

    def __call__(self, rgba: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The warped image (RGB) of a source image (``(h, w, 4)`` uint8 RGBA, or RGB).

        Each pixel gathers its four neighbours as whole 32-bit RGBA words and blends
        them in 1/256 steps (integer arithmetic, the same on every machine); at
        640x480 it took 17 ms here where blending in float32 took 30 ms (the cost
        with each renderer is in docs/benchmarks.md).
        """
        if rgba.shape[-1] == 3:
            rgba = np.concatenate([rgba, np.zeros(rgba.shape[:-1] + (1,), np.uint8)], -1)
        words = np.ascontiguousarray(rgba).view(np.uint32).ravel()
        # Two bytes of each word at a time in 16-bit lanes (R and B, then G and A): a
        # byte times a weight of at most 256, summed over weights that make 256,
        # stays below 2**16, so the lanes never carry into each other.
        even = np.zeros(self._index.shape[1], np.uint32)
        odd = np.zeros_like(even)
        for k in range(4):
            wd = words.take(self._index[k])
            wk = self._weight[k]
            even += (wd & 0x00FF00FF) * wk
            odd += ((wd >> 8) & 0x00FF00FF) * wk
        even += 0x00800080
        odd += 0x00800080
        acc = ((even >> 8) & 0x00FF00FF) | (odd & 0xFF00FF00)
        h, w = self.shape
        img = acc.view(np.uint8).reshape(h, w, 4)
        if out is None:
            out = np.empty((h, w, 3), np.uint8)
        out[..., 0] = img[..., 0]
        out[..., 1] = img[..., 1]
        out[..., 2] = img[..., 2]
        return out


def undistorter(calibration: Calibration, new_K: tuple[float, ...] | None = None) -> Remap:
    """A :class:`Remap` that undistorts images of ``calibration``'s lens into a pinhole
    image of the same size with intrinsic matrix ``new_K`` (default: the
    calibration's own ``K``, as OpenCV's ``undistort`` does), as a perception stack
    rectifies the robot's images. Pixels whose ray the lens does not see are black.

    Example:
        >>> u = undistorter(DUCKIEBOT.scaled(64, 48))
        >>> u(np.full((48, 64, 3), 90, np.uint8))[24, 32].tolist()
        [90, 90, 90]
    """
    cal = calibration
    k = new_K or cal.K
    u, v = np.meshgrid(np.arange(cal.width) + 0.5, np.arange(cal.height) + 0.5)
    x, y = (u - k[2]) / k[0], (v - k[5]) / k[4]
    xd, yd = cal.distort(x, y)
    px, py = xd * cal.fx + cal.cx - 0.5, yd * cal.fy + cal.cy - 0.5
    outside = (px < -0.5) | (px > cal.width - 0.5) | (py < -0.5) | (py > cal.height - 0.5)
    remap = Remap(px, py, (cal.width, cal.height))
    remap._weight[:, outside.ravel()] = 0  # black where the lens sees nothing
    return remap


def optimal_new_K(calibration: Calibration, alpha: float = 0.0) -> tuple[float, ...]:
    """The rectified image's intrinsic matrix as OpenCV's ``getOptimalNewCameraMatrix``
    chooses it (same size, principal point not forced to the centre), which
    Duckietown's AprilTag node calls with ``rectify_alpha`` 0: at ``alpha`` 0 every
    rectified pixel is one the lens sees, at 1 every pixel the lens sees is kept.

    As OpenCV does, it undistorts a 9x9 grid of points spread over the image (with
    ``undistortPoints``' five fixed-point steps, which for this strong a lens stop
    short of the exact inverse: the matrix is OpenCV's, not the ideal crop) and maps
    the rectangle inside (alpha 0) or around (alpha 1) the grid's border onto the
    image, blending the two for alpha between. (This project's pixel centres sit at
    ``i + 0.5``, OpenCV's at ``i``: the matrix is in this project's terms.)

    Example:
        >>> k = optimal_new_K(DUCKIEBOT)
        >>> round(k[0] / DUCKIEBOT.fx, 2)  # wider: the lens's barrel unbent, cropped
        0.72
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha is between 0 and 1, not {alpha}")
    cal, n = calibration, 9
    u, v = np.meshgrid(np.linspace(0.5, cal.width - 0.5, n),
                       np.linspace(0.5, cal.height - 0.5, n))
    x0, y0 = (u - cal.cx) / cal.fx, (v - cal.cy) / cal.fy
    k1, k2, p1, p2, k3 = cal.D
    x, y = x0, y0
    for _ in range(5):  # OpenCV's undistortPoints, its default five steps
        r2 = x * x + y * y
        icdist = 1 / (1 + ((k3 * r2 + k2) * r2 + k1) * r2)
        x, y = ((x0 - (2 * p1 * x * y + p2 * (r2 + 2 * x * x))) * icdist,
                (y0 - (p1 * (r2 + 2 * y * y) + 2 * p2 * x * y)) * icdist)
    inner = (x[:, 0].max(), y[0].max(), x[:, -1].min(), y[-1].min())
    outer = (x.min(), y.min(), x.max(), y.max())
    out = []
    for x0, y0, x1, y1 in (inner, outer):
        fx, fy = (cal.width - 1) / (x1 - x0), (cal.height - 1) / (y1 - y0)
        out.append((fx, fy, 0.5 - fx * x0, 0.5 - fy * y0))
    fx, fy, cx, cy = (float(a * (1 - alpha) + b * alpha) for a, b in zip(*out, strict=True))
    return (fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0)


@dataclass
class LensMap:
    """How a lens image is made from a wider pinhole image.

    Args:
        calibration: the lens.
        oversample: pinhole pixels per lens pixel at the image centre (1.0: the
            calibration's own focal length).

    Attributes:
        pinhole_wh: the pinhole image's size.
        frustum: ``(left, right, bottom, top)`` of the pinhole image at unit distance
            (for pybullet's ``computeProjectionMatrix`` with ``near`` scaling).
    """

    calibration: Calibration
    oversample: float = 1.0
    pinhole_wh: tuple[int, int] = field(init=False)
    frustum: tuple[float, float, float, float] = field(init=False)
    _remap: Remap = field(init=False, repr=False)

    def __post_init__(self) -> None:
        cal = self.calibration
        x, y = cal.pixel_rays()  # y grows downwards, as image rows do
        f = max(cal.fx, cal.fy) * self.oversample
        # One pinhole pixel beyond the outermost ray on every side, for the blend.
        left, right = float(x.min()) - 1.5 / f, float(x.max()) + 1.5 / f
        top, bottom = float(y.min()) - 1.5 / f, float(y.max()) + 1.5 / f
        w = math.ceil((right - left) * f)
        h = math.ceil((bottom - top) * f)
        right, bottom = left + w / f, top + h / f  # square pinhole pixels of 1/f
        self.pinhole_wh = (w, h)
        # OpenGL's frustum has y up: the image's top row is -top in y-down terms.
        self.frustum = (left, right, -bottom, -top)
        px = (x - left) * f - 0.5  # pinhole pixel coordinates (centres at integers)
        py = (y - top) * f - 0.5
        self._remap = Remap(px, py, (w, h))

    def remap(self, rgba: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The lens image (RGB) from the pinhole image the renderer drew (``(h, w, 4)``
        uint8 RGBA, rows top down, C-contiguous as pybullet returns it).

        Example:
            >>> m = LensMap(DUCKIEBOT.scaled(64, 48))
            >>> w, h = m.pinhole_wh
            >>> img = np.full((h, w, 4), 200, np.uint8)
            >>> m.remap(img).shape, int(m.remap(img).min()), int(m.remap(img).max())
            ((48, 64, 3), 200, 200)
        """
        return self._remap(rgba, out)
