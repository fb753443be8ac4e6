"""What is in a robot's way, from the poses: the robot or object ahead of it, and how far
a lane through an intersection must move aside to pass what stands in it.

Both are geometry on known poses (every process that sees the same states computes the
same answer), for :mod:`dmxshm.world.routes`, which holds a robot whose way is blocked
(``may_go`` 0) and says what holds it, and for the lane figures, which name what kept a
robot still (:mod:`dmxshm.sim.scoring`).

A robot is seen as a disc of :data:`ROBOT_RADIUS_M` around its chassis's centre; an
object as a disc of its footprint (:func:`~dmxshm.world.objects.footprint_m`) around its
position. Something is *ahead* of a robot when its disc reaches into the corridor the
robot would sweep driving straight on (its width, :data:`ROBOT_HALF_WIDTH_M` either side
of its axis), in front of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dmxshm.world.lanes import Path, Segment
from dmxshm.world.objects import MapObject, parts
from dmxshm.world.robot import BASELINE_M, CHASSIS_CENTER_M, CHASSIS_FRONT_X_M, CHASSIS_SIZE_M

WHEEL_WIDTH_M = 0.02
"""Width of a drive wheel (the collision URDF's cylinders)."""

ROBOT_HALF_WIDTH_M = BASELINE_M / 2 + WHEEL_WIDTH_M / 2
"""Half the robot's width over its wheels (0.065 m)."""

ROBOT_RADIUS_M = 0.09
"""The disc another robot is seen as, around its chassis's centre (the chassis is
0.18 x 0.10 m; its corners reach 0.103 m, its sides 0.065 m)."""

STOP_GAP_M = 0.1
"""A robot stops when what is ahead of it is this close to its front (the time of
flight's own stop, 0.15 m of range, comes first for what its ray sees)."""

CLEARANCE_M = 0.03
"""Room kept between a robot's side and an object it passes, for the lane follower's
tracking error."""

CURVE_DRIFT_M = 0.04
"""How far outside a curve's lane the lane follower may run (it lags: 0.03 m measured on
a left turn of 0.42 m radius); kept clear on that side too."""

MAX_SHIFT_M = 0.1
"""The most a lane through an intersection moves aside to pass an object: the robot
then still keeps clear of the oncoming lane's robots on its approach."""


@dataclass(frozen=True)
class Obstacle:
    """Something ahead of a robot: another robot (``robot`` its index) or a map object
    (``kind`` its kind), ``gap_m`` from the robot's front."""

    gap_m: float
    robot: int | None = None
    kind: str | None = None

    def describe(self) -> str:
        """``robot 5 ahead 0.12 m`` or ``an object (cone) ahead 0.04 m``.

        Example:
            >>> Obstacle(0.123, robot=5).describe(), Obstacle(0.04, kind="cone").describe()
            ('robot 5 ahead 0.12 m', 'an object (cone) ahead 0.04 m')
        """
        who = f"robot {self.robot}" if self.robot is not None else f"an object ({self.kind})"
        return f"{who} ahead {max(self.gap_m, 0.0):.2f} m"


ROBOT_TOP_M = CHASSIS_CENTER_M[2] + CHASSIS_SIZE_M[2] / 2
"""Height of the robot's chassis top (0.075 m): what of an object is higher passes over
it (a traffic light's lamp box)."""


def reach_m(obj: MapObject) -> float:
    """The radius, from the object's position, of the floor its colliding parts below
    :data:`ROBOT_TOP_M` cover (0: nothing a robot can hit).

    Example:
        >>> light = MapObject("l", "trafficlight", 0.0, 0.0, height_m=0.4)
        >>> round(reach_m(light), 3)  # the pole (its lamp box is 0.32 m up)
        0.01
    """
    out = 0.0
    for p in parts(obj):
        bottom = p.pos[2] - (p.size[1] / 2 if p.geom == "cylinder" else p.size[-1])
        if p.collide and bottom < ROBOT_TOP_M:
            reach = math.hypot(*p.size[:2]) if p.geom == "box" else p.size[0]
            out = max(out, math.hypot(p.pos[0], p.pos[1]) + reach)
    return out


Disc = tuple[float, float, float, str]
"""``(x, y, radius, kind)``: a static object as a robot can hit it."""

CELL_M = 0.5
"""The side of :class:`Discs`' cells."""


class Discs(list[Disc]):
    """The static objects' discs (a list), bucketed by a grid of :data:`CELL_M` cells so
    that :meth:`near` gives a robot only those around it: a map may hold 1,000 objects,
    and the routes and the lanes tap look ahead of every robot at every state."""

    def __init__(self, discs: Sequence[Disc] = ()) -> None:
        super().__init__(discs)
        self.max_radius_m = max((d[2] for d in self), default=0.0)
        self._cells: dict[tuple[int, int], list[Disc]] = {}
        for d in self:
            self._cells.setdefault((math.floor(d[0] / CELL_M), math.floor(d[1] / CELL_M)),
                                   []).append(d)

    def near(self, x: float, y: float, reach_m: float) -> list[Disc]:
        """The discs whose centres are within ``reach_m`` (and a cell) of ``(x, y)``."""
        if len(self) <= 8:
            return self
        lo_i, hi_i = math.floor((x - reach_m) / CELL_M), math.floor((x + reach_m) / CELL_M)
        lo_j, hi_j = math.floor((y - reach_m) / CELL_M), math.floor((y + reach_m) / CELL_M)
        cells = self._cells
        return [d for i in range(lo_i, hi_i + 1) for j in range(lo_j, hi_j + 1)
                for d in cells.get((i, j), ())]


def static_discs(objects: Sequence[MapObject]) -> Discs:
    """``(x, y, radius, kind)`` of each static object that a robot can hit."""
    return Discs([(obj.x_m, obj.y_m, reach_m(obj), obj.kind) for obj in objects
                  if obj.static and reach_m(obj) > 0])


def _gap(x: float, y: float, c: float, s: float, ox: float, oy: float,
         radius: float, look_m: float) -> float | None:
    """The gap from the front of a robot at ``(x, y)`` heading ``(c, s)`` to a disc at
    ``(ox, oy)``, if the disc is in its corridor within ``look_m``."""
    dx, dy = ox - x, oy - y
    fwd = dx * c + dy * s
    side = -dx * s + dy * c
    if fwd <= 0 or abs(side) > ROBOT_HALF_WIDTH_M + radius:
        return None
    # The disc's nearest point along the corridor (its edge where it overlaps the axis).
    reach = math.sqrt(max(radius * radius - max(abs(side) - ROBOT_HALF_WIDTH_M, 0.0) ** 2,
                          0.0))
    gap = fwd - reach - CHASSIS_FRONT_X_M
    return gap if gap <= look_m else None


def robot_centres(poses: Sequence[Sequence[float]]) -> list[tuple[float, float]]:
    """Each robot's chassis centre, where its disc is (once a state, for every robot)."""
    back = CHASSIS_CENTER_M[0]
    return [(p[0] + back * math.cos(p[2]), p[1] + back * math.sin(p[2])) for p in poses]


def ahead(i: int, poses: Sequence[Sequence[float]],
          discs: Sequence[tuple[float, float, float, str]],
          look_m: float = STOP_GAP_M,
          centres: Sequence[tuple[float, float]] | None = None) -> Obstacle | None:
    """The nearest robot or static object (``discs``: :func:`static_discs`) ahead of
    robot ``i`` within ``look_m`` of its front, or None.

    Example:
        >>> poses = [(0.0, 0.0, 0.0), (0.25, 0.02, 0.0)]  # robot 1 0.25 m ahead of 0
        >>> ahead(0, poses, []).describe(), ahead(1, poses, [])
        ('robot 1 ahead 0.07 m', None)
    """
    x, y, yaw = poses[i][0], poses[i][1], poses[i][2]
    c, s = math.cos(yaw), math.sin(yaw)
    best: Obstacle | None = None
    if centres is None:
        centres = robot_centres(poses)
    # Nothing further than this from (x, y) can be in the corridor within look_m.
    far = look_m + CHASSIS_FRONT_X_M + ROBOT_HALF_WIDTH_M + 2 * ROBOT_RADIUS_M
    for j, (xj, yj) in enumerate(centres):
        if j == i or abs(xj - x) > far or abs(yj - y) > far:
            continue
        gap = _gap(x, y, c, s, xj, yj, ROBOT_RADIUS_M, look_m)
        if gap is not None and (best is None or gap < best.gap_m):
            best = Obstacle(gap, robot=j)
    near = discs.near(x, y, look_m + CHASSIS_FRONT_X_M + ROBOT_HALF_WIDTH_M
                      + 2 * discs.max_radius_m) \
        if isinstance(discs, Discs) else discs
    for ox, oy, r, kind in near:
        gap = _gap(x, y, c, s, ox, oy, r, look_m)
        if gap is not None and (best is None or gap < best.gap_m):
            best = Obstacle(gap, kind=kind)
    return best


def lane_shift(path: Path, lane_offset_m: float,
               discs: Sequence[tuple[float, float, float, str]],
               extend_m: float = 0.15) -> float | None:
    """How far to the left (+) or right (-) of its lane a robot must drive along
    ``path`` (a centreline; the lane is ``lane_offset_m`` to its right) to pass every
    disc with :data:`CLEARANCE_M` to spare: 0.0 where nothing is near, the smallest
    such shift up to :data:`MAX_SHIFT_M`, or None where none is enough. The lane is
    taken ``extend_m`` straight on beyond both ends (the robot's body reaches there).

    Example:
        >>> from dmxshm.world.lanes import Segment
        >>> road = Segment(0.0, 0.0, 1.0, 0.0)  # east; its lane is y = -0.1
        >>> lane_shift(road, 0.1, []), lane_shift(road, 0.1, [(0.5, -0.17, 0.01, "pole")])
        (0.0, 0.04)
        >>> lane_shift(road, 0.1, [(0.5, -0.1, 0.3, "house")]) is None
        True
    """
    need = ROBOT_HALF_WIDTH_M + CLEARANCE_M
    near = [d for d in discs if _distance_to(path, d[0], d[1]) < lane_offset_m + MAX_SHIFT_M
            + need + d[2] + extend_m]
    if not near:
        return 0.0
    samples = _samples(path, extend_m)
    # A curve's robot runs wide: to the right of a left turn, the left of a right one.
    outward = 0.0 if isinstance(path, Segment) else math.copysign(CURVE_DRIFT_M,
                                                                  path.sweep_rad)
    steps = round(MAX_SHIFT_M / 0.01)
    for k in sorted(range(-steps, steps + 1), key=lambda k: (abs(k), -k)):
        shift = k * 0.01
        # The robot's lines, to the right of the centreline: as asked, and run wide.
        lines = {lane_offset_m - shift, lane_offset_m - shift + outward}
        if all(math.hypot(px + right * math.sin(yaw) - ox, py - right * math.cos(yaw) - oy)
               >= need + r for right in lines for px, py, yaw in samples
               for ox, oy, r, _ in near):
            return round(shift, 2)
    return None


def _samples(path: Path, extend_m: float, step_m: float = 0.01) -> list[tuple[float, float,
                                                                               float]]:
    """Points ``(x, y, yaw)`` along ``path`` every ``step_m``, and ``extend_m`` straight
    on beyond both of its ends."""
    n = max(int(path.length_m / step_m), 1)
    out = [path.point_at(k / n) for k in range(n + 1)]
    for (x, y, yaw), sign in ((out[0], -1.0), (out[-1], 1.0)):
        m = int(extend_m / step_m)
        out += [(x + sign * k * step_m * math.cos(yaw), y + sign * k * step_m * math.sin(yaw),
                 yaw) for k in range(1, m + 1)]
    return out


def _distance_to(path: Path, x: float, y: float) -> float:
    return min(math.hypot(px - x, py - y) for px, py, _ in _samples(path, 0.0, 0.05))
