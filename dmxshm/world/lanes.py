"""Road centrelines (segments and quarter arcs) and the lane pose of a robot.

Every road tile contributes one or two centrelines in world coordinates (see
:mod:`dmxshm.world.tiles`). Roads are two-way: a robot drives in the right
lane of whichever direction of the centreline its heading is closer to, so
a robot that turns around is in the right lane of the other direction.

Sign conventions (Duckietown's ``d`` and ``phi``): the lateral offset is
positive when the robot is to the *left* of its right-lane centre (towards
the yellow line), the heading error is positive when the robot points to
the left of the lane direction, wrapped to ``[-pi, pi)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

TWO_PI = 2.0 * math.pi


def wrap_angle(angle_rad: float) -> float:
    """Wrap an angle to ``[-pi, pi)``.

    Example:
        >>> round(wrap_angle(3 * math.pi / 2), 6)
        -1.570796
    """
    return (angle_rad + math.pi) % TWO_PI - math.pi


class LanePose(NamedTuple):
    """Where a robot is relative to its lane.

    Attributes:
        offset_m: lateral offset from the right-lane centre, positive to the
            left; ``nan`` when no road is within one tile.
        heading_err_rad: robot yaw minus lane direction, in ``[-pi, pi)``;
            ``nan`` when no road is within one tile.
        on_road: whether the point lies on a road tile, inside the outer
            white lines.
    """

    offset_m: float
    heading_err_rad: float
    on_road: bool


class Projection(NamedTuple):
    """A point seen from a centreline.

    Attributes:
        dist_m: distance to the closest point of the centreline (clamped to
            its ends).
        left_m: signed perpendicular offset from the centreline's supporting
            line or circle, positive to the left of the path direction.
        yaw_rad: direction of the path at the closest point.
    """

    dist_m: float
    left_m: float
    yaw_rad: float


@dataclass(frozen=True)
class Segment:
    """A straight centreline from ``(x0, y0)`` to ``(x1, y1)``."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def length_m(self) -> float:
        """Length of the segment."""
        return math.hypot(self.x1 - self.x0, self.y1 - self.y0)

    def project(self, x: float, y: float) -> Projection:
        """Distance, signed offset and path direction for the point ``(x, y)``."""
        length = self.length_m
        tx, ty = (self.x1 - self.x0) / length, (self.y1 - self.y0) / length
        rx, ry = x - self.x0, y - self.y0
        along = min(max(rx * tx + ry * ty, 0.0), length)
        dist = math.hypot(rx - along * tx, ry - along * ty)
        return Projection(dist, tx * ry - ty * rx, math.atan2(ty, tx))

    def fraction_of(self, x: float, y: float) -> float:
        """Where along the segment (0 to 1) the point ``(x, y)`` projects."""
        length = self.length_m
        tx, ty = (self.x1 - self.x0) / length, (self.y1 - self.y0) / length
        return min(max((x - self.x0) * tx + (y - self.y0) * ty, 0.0), length) / length

    def point_at(self, fraction: float) -> tuple[float, float, float]:
        """``(x, y, yaw)`` of the centreline at ``fraction`` of its length."""
        return (
            self.x0 + fraction * (self.x1 - self.x0),
            self.y0 + fraction * (self.y1 - self.y0),
            math.atan2(self.y1 - self.y0, self.x1 - self.x0),
        )


@dataclass(frozen=True)
class Arc:
    """A circular centreline around ``(cx, cy)``.

    It starts at polar angle ``start_rad`` and sweeps ``sweep_rad`` (positive:
    counter-clockwise), with ``abs(sweep_rad) < 2 pi``.
    """

    cx: float
    cy: float
    radius_m: float
    start_rad: float
    sweep_rad: float

    @property
    def length_m(self) -> float:
        """Arc length."""
        return abs(self.sweep_rad) * self.radius_m

    def _yaw_at(self, angle_rad: float) -> float:
        # The tangent of a counter-clockwise circle is the radius turned +90 deg.
        return wrap_angle(angle_rad + math.copysign(math.pi / 2, self.sweep_rad))

    def project(self, x: float, y: float) -> Projection:
        """Distance, signed offset and path direction for the point ``(x, y)``."""
        rx, ry = x - self.cx, y - self.cy
        r = math.hypot(rx, ry)
        sign = 1.0 if self.sweep_rad > 0 else -1.0
        angle = self.start_rad + sign * self._travelled(rx, ry)
        px = self.cx + self.radius_m * math.cos(angle)
        py = self.cy + self.radius_m * math.sin(angle)
        left = (self.radius_m - r) * sign
        return Projection(math.hypot(x - px, y - py), left, self._yaw_at(angle))

    def _travelled(self, rx: float, ry: float) -> float:
        """Angle travelled from the start to the point at ``(rx, ry)`` from the centre,
        in [0, 2 pi); past the end, clamped to whichever end is nearer in angle."""
        sweep = abs(self.sweep_rad)
        sign = 1.0 if self.sweep_rad > 0 else -1.0
        travelled = ((math.atan2(ry, rx) - self.start_rad) * sign) % TWO_PI
        if travelled > sweep:
            travelled = sweep if travelled - sweep < TWO_PI - travelled else 0.0
        return travelled

    def fraction_of(self, x: float, y: float) -> float:
        """Where along the arc (0 to 1) the point ``(x, y)`` projects."""
        return self._travelled(x - self.cx, y - self.cy) / abs(self.sweep_rad)

    def point_at(self, fraction: float) -> tuple[float, float, float]:
        """``(x, y, yaw)`` of the centreline at ``fraction`` of its length."""
        angle = self.start_rad + fraction * self.sweep_rad
        return (
            self.cx + self.radius_m * math.cos(angle),
            self.cy + self.radius_m * math.sin(angle),
            self._yaw_at(angle),
        )


Path = Segment | Arc


def lane_pose_among(
    own: tuple[Path, ...],
    nearby: tuple[Path, ...],
    x: float,
    y: float,
    yaw: float,
    *,
    lane_offset_m: float,
    road_half_width_m: float,
    on_road_tile: bool,
) -> tuple[LanePose, float]:
    """The lane pose of ``(x, y, yaw)`` relative to the best of ``paths``.

    The centrelines of the tile under the point come first, so a robot that
    has entered a curve is measured against the curve and not against the
    extension of the straight it came from. Among the centrelines whose road
    contains the point (distance at most ``road_half_width_m``), the one best
    aligned with the heading wins, so at an intersection the robot is
    measured against the road it drives along; when no road contains the
    point, the nearest centreline is used.

    Args:
        own: centrelines of the tile under the point.
        nearby: centrelines of the neighbouring tiles.
        x: position, m.
        y: position, m.
        yaw: heading, rad, counter-clockwise from the x axis.
        lane_offset_m: centreline to right-lane centre.
        road_half_width_m: centreline to the outer edge of the white line.
        on_road_tile: whether ``(x, y)`` lies on a road tile at all.

    Returns:
        The :class:`LanePose`, and the signed curvature (1/m, positive for
        a left turn) of the right lane there: a controller's feed-forward
        turn rate is ``speed * curvature``.
    """
    best: tuple[bool, bool, float, float] | None = None
    result = LanePose(math.nan, math.nan, False), math.nan
    for is_own, path in [(True, p) for p in own] + [(False, p) for p in nearby]:
        if not is_own and best is not None and not best[0]:
            # A road of the tile itself contains the point: by the sort key
            # no neighbouring road can win, so they need not be measured.
            break
        proj = path.project(x, y)
        left, lane_yaw = proj.left_m, proj.yaw_rad
        heading_err = wrap_angle(yaw - lane_yaw)
        forward = abs(heading_err) <= math.pi / 2
        if not forward:  # drives the other direction
            left, heading_err = -left, wrap_angle(heading_err + math.pi)
        inside = proj.dist_m <= road_half_width_m
        # Sort key: inside roads first, then the tile's own, then the best
        # aligned, then the nearest.
        key = (not inside, not is_own, abs(heading_err) if inside else 0.0, proj.dist_m)
        if best is None or key < best:
            best = key
            curvature = 0.0
            if isinstance(path, Arc):
                # Turning left, the right lane is the outer one; right, the inner.
                left_turn = (path.sweep_rad > 0) == forward
                curvature = (1.0 / (path.radius_m + lane_offset_m) if left_turn
                             else -1.0 / (path.radius_m - lane_offset_m))
            result = (LanePose(left + lane_offset_m, heading_err, inside and on_road_tile),
                      curvature)
    return result
