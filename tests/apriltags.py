"""Duckietown's AprilTag detector for the tests that need it."""

from __future__ import annotations

import functools
import os
from typing import Any

import pytest

REQUIRE = os.environ.get("DMXSHM_REQUIRE_APRILTAGS") == "1"
"""Set (CI's environment that installs it): a missing detector fails, not skips."""


def detector() -> Any:
    """A tag36h11 ``dt_apriltags.Detector`` (Duckietown's settings: dt-core's
    ``apriltag_detector_node`` defaults), one a process; the test skips (with the
    reason) where dt-apriltags is not installed, unless :data:`REQUIRE`."""
    return _detector()


@functools.cache
def _detector() -> Any:
    # One for the whole run: dt-apriltags' detectors, made and dropped test after
    # test, once crashed the process here (a segmentation fault with no Python frame,
    # not reproduced since).
    try:
        from dt_apriltags import Detector
    except ImportError:
        if REQUIRE:
            raise
        pytest.skip("dt-apriltags (Duckietown's AprilTag detector) is not installed: "
                    "pip install dt-apriltags (Linux x86-64 and ARM wheels only)")
    return Detector(families="tag36h11", nthreads=1, quad_decimate=2.0, quad_sigma=0.0,
                    refine_edges=1, decode_sharpening=0.25)
