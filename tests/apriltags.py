"""Duckietown's AprilTag detector for the tests that need it."""

from __future__ import annotations

import os
from typing import Any

import pytest

REQUIRE = os.environ.get("DMXSHM_REQUIRE_APRILTAGS") == "1"
"""Set (CI's environment that installs it): a missing detector fails, not skips."""


def detector() -> Any:
    """A tag36h11 ``dt_apriltags.Detector``; the test skips (with the reason) where
    dt-apriltags is not installed, unless :data:`REQUIRE`."""
    try:
        from dt_apriltags import Detector
    except ImportError:
        if REQUIRE:
            raise
        pytest.skip("dt-apriltags (Duckietown's AprilTag detector) is not installed: "
                    "pip install dt-apriltags (Linux x86-64 and ARM wheels only)")
    return Detector(families="tag36h11")
