"""dt-core's line detector, run as on the robot (its ``default.yaml``: the frame resized
to 160x120 with nearest neighbours, the top 40 rows cut, OpenCV's HSV ranges, dilated,
Canny's edges on the BGR frame, probabilistic Hough lines), on a Duckietown-look frame:
it finds white, yellow and red segments where the markings are, and none of them in
the flat look's yellow. Needs OpenCV (``cv2``): CI's extras environment installs it;
elsewhere the tests skip with the reason."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from dmxshm.matrix import line_colours as lc
from tests.matrix.test_line_colours import _frames

REQUIRE = os.environ.get("DMXSHM_REQUIRE_OPENCV") == "1"
"""Set (CI's environment that installs OpenCV): a missing cv2 fails, not skips."""


def _cv2() -> Any:
    try:
        import cv2
    except ImportError:
        if REQUIRE:
            raise
        pytest.skip("OpenCV is not installed (dt-core's line detector needs it): pip "
                    "install opencv-python-headless")
    return cv2


def segments(rgb: np.ndarray) -> dict[str, np.ndarray]:
    """dt-core's ``LineDetector`` on an RGB frame: each colour's segments ``(n, 4)``
    (x1, y1, x2, y2 in the cut 160x80 frame)."""
    cv2 = _cv2()
    bgr = cv2.resize(np.ascontiguousarray(rgb[..., ::-1]), (160, 120),
                     interpolation=cv2.INTER_NEAREST)[40:]
    hsv = cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV)
    edges = cv2.Canny(bgr, 80, 200, apertureSize=3)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3))
    out = {}
    for name, ranges in lc.RANGES.items():
        mask = np.zeros(hsv.shape[:2], np.uint8)
        for low, high in ranges:
            mask |= cv2.inRange(hsv, np.array(low, np.uint8), np.array(high, np.uint8))
        edge = cv2.bitwise_and(cv2.dilate(mask, kernel), edges)
        lines = cv2.HoughLinesP(edge, rho=1, theta=np.pi / 180, threshold=2,
                                minLineLength=3, maxLineGap=1)
        out[name] = np.zeros((0, 4), np.int64) if lines is None else lines.reshape(-1, 4)
    return out


@pytest.mark.parametrize(("map_name", "where"), [("big-loop", "straight"),
                                                 ("grid", "crossing")])
def test_dt_cores_line_detector_finds_the_markings(map_name: str, where: str) -> None:
    flat, duckietown = _frames(map_name, where)
    found = segments(duckietown)
    assert len(found["white"]) >= 5 and len(found["yellow"]) >= 5, {
        k: len(v) for k, v in found.items()}
    if where == "crossing":
        assert len(found["red"]) >= 3
    else:
        assert len(found["red"]) == 0  # no stop line on a straight
    # the yellow segments lie on the yellow tape: the frame's yellow pixels around them
    is_yellow = lc.classes(duckietown)["yellow"]
    for x1, y1, x2, y2 in found["yellow"]:
        # the middle, back in the 320x240 frame (twice the 160x120's; 40 rows cut)
        u, v = x1 + x2, (y1 + y2) + 80
        assert is_yellow[max(v - 4, 0):v + 5, max(u - 4, 0):u + 5].any()
    assert len(segments(flat)["yellow"]) == 0  # the flat look's yellow is not its yellow
