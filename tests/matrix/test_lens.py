"""The Duckiebot's lens camera: the distortion model and its inverse, the remap, and
straight road edges that are straight again after undistortion with the published
calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmxshm.matrix.camera import Camera
from dmxshm.matrix.lens import DUCKIEBOT, LensMap
from dmxshm.world.maps import load_map
from dmxshm.world.world import World


@settings(max_examples=200, deadline=None)
@given(u=st.floats(0.0, 640.0), v=st.floats(0.0, 480.0))
def test_undistort_inverts_the_published_model_across_the_image(u: float, v: float) -> None:
    cal = DUCKIEBOT
    xd = np.array([(u - cal.cx) / cal.fx])
    yd = np.array([(v - cal.cy) / cal.fy])
    x, y = cal.undistort(xd, yd)
    back = cal.distort(x, y)
    assert back[0][0] == pytest.approx(xd[0], abs=1e-10)
    assert back[1][0] == pytest.approx(yd[0], abs=1e-10)


def test_the_distortion_is_a_barrel_one_that_grows_with_the_radius() -> None:
    x, y = DUCKIEBOT.pixel_rays()
    # The corners see much further out than a pinhole of the same K would.
    assert abs(x[0, 0]) > 1.3 * abs((0.5 - DUCKIEBOT.cx) / DUCKIEBOT.fx)
    # The centre is nearly undistorted.
    c = x[240, 303], y[240, 303]
    assert abs(c[0]) < 0.01 and abs(c[1]) < 0.03


def test_each_lens_pixel_takes_the_pinhole_pixel_its_ray_lands_on() -> None:
    m = LensMap(DUCKIEBOT.scaled(160, 120))
    w, h = m.pinhole_wh
    # A pinhole image whose pixels say where they are (R: column / 4, G: row / 4),
    # constant over 4x4 blocks so that the blend of neighbours is exact inside a block.
    cols, rows = np.meshgrid(np.arange(w), np.arange(h))
    img = np.zeros((h, w, 4), np.uint8)
    img[..., 0], img[..., 1] = (cols // 4) % 256, (rows // 4) % 256
    out = m.remap(img)
    x, y = m.calibration.pixel_rays()
    left, _, _, top = m.frustum  # frustum's top is -(the image's top in y-down terms)
    f = max(m.calibration.fx, m.calibration.fy)
    px, py = (x - left) * f - 0.5, (y + top) * f - 0.5
    inside = (px % 4 > 1) & (px % 4 < 3) & (py % 4 > 1) & (py % 4 < 3)
    assert inside.mean() > 0.2
    assert np.array_equal(out[..., 0][inside], ((px[inside] // 4) % 256).astype(np.uint8))
    assert np.array_equal(out[..., 1][inside], ((py[inside] // 4) % 256).astype(np.uint8))


def _straight_road_image(renderer: str = "tiny") -> tuple[np.ndarray, Camera]:
    m = load_map("big-loop")
    row = m.tiles[1]
    col = next(c for c, t in enumerate(row) if t.kind == "straight" and t.rotation_deg == 0)
    cx, cy = m.tile_center(1, col)
    cam = Camera.duckiebot(renderer=renderer)
    with World(m, 1, renderer=renderer) as w:  # heading east in the right lane
        w.replace_robots([(cx - m.tile_size_m / 2, cy - m.lane_offset_m, 0.0)])
        return cam.render(w.client, w.state()[0]), cam


def _edge_points(img: np.ndarray) -> np.ndarray:
    """The inner edge of the right white line: for each row of the road's near part,
    the first white pixel right of the image's centre."""
    white = (img.astype(int).min(axis=2) > 150)
    pts = []
    for v in range(250, 470, 4):
        cols = np.flatnonzero(white[v, 330:]) + 330
        if cols.size:
            pts.append((cols[0], v + 0.5))
    return np.array(pts, float)


def _line_residual_px(x: np.ndarray, y: np.ndarray, f: float) -> float:
    """The largest distance of the points from their best line, in pixels of focal f."""
    a = np.stack([x - x.mean(), y - y.mean()], 1)
    _, _, vt = np.linalg.svd(a, full_matrices=False)
    return float(np.abs(a @ vt[1]).max() * f)


def test_straight_road_edges_are_straight_after_undistortion() -> None:
    img, cam = _straight_road_image()
    pts = _edge_points(img)
    assert len(pts) > 30
    cal = cam.lens
    xd, yd = (pts[:, 0] - cal.cx) / cal.fx, (pts[:, 1] - cal.cy) / cal.fy
    # In the lens image the edge bends: many pixels from any line.
    bent = _line_residual_px(xd, yd, cal.fx)
    x, y = cal.undistort(xd, yd)
    straight = _line_residual_px(x, y, cal.fx)
    # Undistorted with the published calibration it is straight to within 1.5 pixels
    # (the edge is found to the pixel, and a pixel near the border spans more).
    assert bent > 5.0  # 7.2 px here
    assert straight < 1.5, (bent, straight)  # 0.88 px here


def test_the_lens_camera_is_deterministic_and_sized_as_asked() -> None:
    a, cam = _straight_road_image()
    b, _ = _straight_road_image()
    assert a.shape == (480, 640, 3) and np.array_equal(a, b)
    assert cam.calibration["K"][0] == pytest.approx(305.5718893575089)
    small = Camera.duckiebot(160, 120)
    assert small.shape == (120, 160, 3) and small.lens.fx == pytest.approx(305.57 / 4, abs=0.01)
    assert small.render_wh[0] > 160 and math.isclose(small.tilt_deg, 19.15)


def test_an_undistorted_lens_image_shows_the_road_edge_straight() -> None:
    from dmxshm.matrix.lens import undistorter

    img, cam = _straight_road_image()
    rect = undistorter(cam.lens)(img)
    pts = _edge_points(rect)
    assert len(pts) > 30
    # Found to the pixel in the rectified image: straight within 1.5 pixels.
    assert _line_residual_px(pts[:, 0], pts[:, 1], 1.0) < 1.5
    assert _line_residual_px(*_edge_points(img).T, 1.0) > 5.0  # the lens image bends it


# OpenCV 5.1.0's (opencv-python-headless) getOptimalNewCameraMatrix(K, D, (640, 480),
# alpha) for the published calibration (centreing off): fx, fy, cx, cy, in OpenCV's
# pixel terms (centres at i).
OPENCV_NEW_K = {0.0: (220.6258, 239.5400, 302.3874, 227.8867),
                1.0: (211.5653, 213.6744, 302.5514, 232.1159)}


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_the_rectified_matrix_is_opencvs(alpha: float) -> None:
    """Duckietown's AprilTag node rectifies with OpenCV's choice of matrix (alpha 0):
    the same zoom (within 0.05 px of focal length) and centre (within the half pixel
    by which the two count pixel centres)."""
    from dmxshm.matrix.lens import optimal_new_K, undistorter

    k = optimal_new_K(DUCKIEBOT, alpha)
    fx, fy, cx, cy = OPENCV_NEW_K[alpha]
    assert k[0] == pytest.approx(fx, abs=0.05) and k[4] == pytest.approx(fy, abs=0.05)
    assert abs(k[2] - cx) <= 0.5 and abs(k[5] - cy) <= 0.5
    black = (undistorter(DUCKIEBOT, k)(np.full((480, 640, 3), 200, np.uint8)) == 0).all(-1)
    if alpha == 0.0:  # every pixel one the lens sees but slivers in the corners, as
        # OpenCV's own (1378 pixels: its undistortPoints' five steps fall short)
        assert black.sum() < 1600 and not black[40:-40, 40:-40].any()
    else:  # every pixel the lens sees kept: black corners
        assert black[0, 0] and black[-1, -1] and black.mean() > 0.02
    with pytest.raises(ValueError, match="alpha is between 0 and 1"):
        optimal_new_K(DUCKIEBOT, 1.5)
