"""Centreline projections and lane poses."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmxshm.world.lanes import Arc, Segment, lane_pose_among, wrap_angle

angles = st.floats(-50.0, 50.0, allow_nan=False)
coords = st.floats(-2.0, 2.0, allow_nan=False)


@given(angles)
def test_wrap_angle_range_and_equivalence(a: float) -> None:
    w = wrap_angle(a)
    assert -math.pi <= w < math.pi
    assert math.cos(w) == pytest.approx(math.cos(a), abs=1e-9)
    assert math.sin(w) == pytest.approx(math.sin(a), abs=1e-9)


@given(coords, coords)
def test_segment_projection(x: float, y: float) -> None:
    seg = Segment(0.0, 0.0, 1.0, 0.0)
    proj = seg.project(x, y)
    assert proj.left_m == pytest.approx(y)  # +y is left of a path heading +x
    assert proj.yaw_rad == 0.0
    expected = math.hypot(x - min(max(x, 0.0), 1.0), y)
    assert proj.dist_m == pytest.approx(expected)


@given(st.floats(0.0, 1.0), st.floats(-0.2, 0.2))
def test_arc_projection(fraction: float, radial_m: float) -> None:
    # Counter-clockwise quarter circle of radius 0.5 from polar 90 to 180 deg.
    arc = Arc(0.0, 0.0, 0.5, math.pi / 2, math.pi / 2)
    px, py, yaw = arc.point_at(fraction)
    angle = math.pi / 2 + fraction * math.pi / 2
    x, y = px + radial_m * math.cos(angle), py + radial_m * math.sin(angle)
    proj = arc.project(x, y)
    assert proj.dist_m == pytest.approx(abs(radial_m), abs=1e-9)
    assert proj.left_m == pytest.approx(-radial_m, abs=1e-9)  # outward is right
    assert wrap_angle(proj.yaw_rad - yaw) == pytest.approx(0.0, abs=1e-9)
    # Travelling counter-clockwise at polar angle a, the heading is a + 90 deg.
    assert wrap_angle(yaw - angle - math.pi / 2) == pytest.approx(0.0, abs=1e-9)


def test_clockwise_arc_left_is_outward() -> None:
    arc = Arc(0.0, 0.0, 0.5, math.pi, -math.pi / 2)  # from (-0.5, 0) to (0, 0.5)
    assert arc.project(-0.6, 0.0).left_m == pytest.approx(0.1)
    assert arc.point_at(0.0)[2] == pytest.approx(math.pi / 2)


def test_arc_clamps_to_nearest_end() -> None:
    arc = Arc(0.0, 0.0, 0.5, math.pi / 2, math.pi / 2)
    assert arc.project(0.5, 0.0).dist_m == pytest.approx(math.hypot(0.5, 0.5))
    assert arc.project(0.1, 0.5).dist_m == pytest.approx(0.1)


def test_heading_picks_direction_and_lane() -> None:
    seg = (Segment(0.0, 0.0, 1.0, 0.0),)
    kw = {"lane_offset_m": 0.1, "road_half_width_m": 0.3, "on_road_tile": True}
    east, curvature = lane_pose_among(seg, (), 0.5, -0.1, 0.2, **kw)
    assert curvature == 0.0
    assert east.offset_m == pytest.approx(0.0, abs=1e-12)
    assert east.heading_err_rad == pytest.approx(0.2)
    west = lane_pose_among(seg, (), 0.5, -0.1, math.pi - 0.2, **kw)[0]
    assert west.offset_m == pytest.approx(0.2)  # in the left lane when heading west
    assert west.heading_err_rad == pytest.approx(-0.2)
    assert lane_pose_among((), (), 0.0, 0.0, 0.0, **kw)[0].on_road is False
