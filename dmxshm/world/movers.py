"""Objects that move along a lane (a map object with ``static: false``).

A moving object drives in the right lane of the road it stands on, at its speed
(:attr:`~dmxshm.world.objects.MapObject.speed_m_s`; when the map gives none, the
kind's :data:`DEFAULT_SPEED_M_S`), from tile to tile:

- it starts on the right-lane centre nearest its pose, facing that lane's
  direction (of the lanes through its tile, the one best aligned with its yaw);
- through a straight or a curve it follows the lane; at a 3-way or a 4-way it
  takes a turn drawn from a generator keyed by the seed, the object's index and
  the count of its intersections (as ``--route seed`` draws a robot's turns);
- where its road ends (at the map's border, or at a tile with no road back), it
  turns round on a half circle and drives back in the other lane.

Its pose is a function of the simulated time only (:meth:`Mover.pose`): the
engine, every renderer, the time-of-flight sensor, the batch env's scene and a
replay put it in the same place at the same time without telling each other,
whatever the number of processes. It does not stop or yield: robots stop behind
it (the lane follower's time of flight) and it pushes what stands in its way
(its body has no mass; it is moved, not simulated).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from dmxshm.world.lanes import Arc, Path, Segment, wrap_angle
from dmxshm.world.objects import MapObject, ObjectError
from dmxshm.world.routes import TURNS, exit_of, turn_path
from dmxshm.world.tiles import EDGE_VECTORS, INTERSECTION_KINDS, opposite_edge

DEFAULT_SPEED_M_S = {"duckiebot": 0.15, "bus": 0.1, "truck": 0.1, "duckie": 0.05}
"""A moving object's speed when the map gives none; other kinds 0.1 m/s."""

OTHER_SPEED_M_S = 0.1
"""The speed of a moving object of a kind not in :data:`DEFAULT_SPEED_M_S`."""


def speed_of(obj: MapObject) -> float:
    """The speed an object moves at (0 for a static one)."""
    if obj.static:
        return 0.0
    return obj.speed_m_s or DEFAULT_SPEED_M_S.get(obj.kind, OTHER_SPEED_M_S)


@dataclass(frozen=True)
class Leg:
    """One piece of a mover's path: ``path`` (in the direction of travel) shifted
    ``right_m`` to its right, starting at arc length ``start_m`` of the whole path."""

    path: Path
    right_m: float
    start_m: float
    length_m: float

    def point(self, s_m: float) -> tuple[float, float, float]:
        """``(x, y, yaw)`` at arc length ``s_m`` of the whole path (within this leg)."""
        f = 0.0 if self.length_m <= 0 else min(max((s_m - self.start_m) / self.length_m,
                                                   0.0), 1.0)
        x, y, yaw = self.path.point_at(f)
        return x + self.right_m * math.sin(yaw), y - self.right_m * math.cos(yaw), yaw


def _lane_length(path: Path, right_m: float) -> float:
    if isinstance(path, Segment):
        return path.length_m
    # A left turn's right lane is outside the centreline, a right turn's inside.
    return abs(path.sweep_rad) * (path.radius_m + math.copysign(right_m, path.sweep_rad))


class Mover:
    """One moving object's path along the lanes (see the module docstring).

    Args:
        road_map: the map (a :class:`~dmxshm.world.maps.RoadMap`).
        obj: the object (``static`` False).
        index: its index among the world's objects (keys its turns).
        seed: the world's seed (keys its turns).

    Raises:
        ObjectError: the object does not stand on a road tile.
    """

    def __init__(self, road_map: object, obj: MapObject, index: int, seed: int) -> None:
        self.map = road_map
        self.obj = obj
        self.speed_m_s = speed_of(obj)
        self._key = (int(seed), 1, int(index))  # 1: a stream apart from the robots' turns
        self._visits = 0
        m = road_map
        cell = m.cell_of(obj.x_m, obj.y_m)  # type: ignore[attr-defined]
        tile = m.tiles[cell[0]][cell[1]] if cell is not None else None  # type: ignore[attr-defined]
        if tile is None or not tile.is_road or len(tile.edges) < 2:
            raise ObjectError(f"object {obj.name!r} ({obj.kind}) moves along a lane, so it "
                              f"must stand on a road tile; ({obj.x_m:g}, {obj.y_m:g}) is "
                              f"{'off the map' if tile is None else 'a ' + tile.kind + ' tile'}")
        assert cell is not None
        self._right = float(m.lane_offset_m)  # type: ignore[attr-defined]
        entry, exit_ = self._nearest_lane(cell, tile.edges)
        first = self._tile_leg(cell, entry, exit_, 0.0)
        # Arc length 0 is where the object stands: the first leg starts before it.
        f = first.path.fraction_of(obj.x_m, obj.y_m)
        first = Leg(first.path, first.right_m, -f * first.length_m, first.length_m)
        self.legs: list[Leg] = [first]
        self._starts = [first.start_m]
        self._at = (cell, entry, exit_)

    def _nearest_lane(self, cell: tuple[int, int],
                      edges: frozenset[str]) -> tuple[str, str]:
        """The (entry, exit) lane through ``cell`` best aligned with the object's yaw
        and nearest it."""
        o = self.obj
        cx, cy = self.map.tile_center(*cell)  # type: ignore[attr-defined]
        size = self.map.tile_size_m  # type: ignore[attr-defined]
        best: tuple[float, str, str] | None = None
        for entry in sorted(edges):
            for exit_ in sorted(edges - {entry}):
                path = turn_path(cx, cy, size, entry, exit_)
                f = path.fraction_of(o.x_m, o.y_m)
                leg = Leg(path, self._right, 0.0, 1.0)
                x, y, yaw = leg.point(f)
                score = abs(wrap_angle(o.yaw_rad - yaw)) + math.hypot(x - o.x_m, y - o.y_m)
                if best is None or score < best[0]:
                    best = (score, entry, exit_)
        assert best is not None
        return best[1], best[2]

    def _tile_leg(self, cell: tuple[int, int], entry: str, exit_: str, start: float,
                  turned: bool = False) -> Leg:
        """The lane through ``cell`` from ``entry`` to ``exit_``; where the road ends at
        ``exit_`` it stops one lane offset short of the edge, and after a U-turn
        (``turned``) it begins one lane offset in, so the U-turn stays on the tile."""
        cx, cy = self.map.tile_center(*cell)  # type: ignore[attr-defined]
        path = turn_path(cx, cy, self.map.tile_size_m, entry, exit_)  # type: ignore[attr-defined]
        length = _lane_length(path, self._right)
        a = self._right / length if turned else 0.0
        b = 1.0 - self._right / length if self._next_cell(cell, exit_) is None else 1.0
        if a or b < 1.0:
            if isinstance(path, Segment):
                dx, dy = path.x1 - path.x0, path.y1 - path.y0
                path = Segment(path.x0 + a * dx, path.y0 + a * dy,
                               path.x0 + b * dx, path.y0 + b * dy)
            else:
                path = Arc(path.cx, path.cy, path.radius_m, path.start_rad + a * path.sweep_rad,
                           (b - a) * path.sweep_rad)
            length *= b - a
        return Leg(path, self._right, start, length)

    def _next_cell(self, cell: tuple[int, int], exit_: str) -> tuple[int, int] | None:
        """The tile the road goes on to across ``exit_``; None where it ends there."""
        m = self.map
        dx, dy = EDGE_VECTORS[exit_]
        nxt = (cell[0] - dy, cell[1] + dx)
        if (0 <= nxt[0] < m.rows and 0 <= nxt[1] < m.cols  # type: ignore[attr-defined]
                and opposite_edge(exit_) in m.tiles[nxt[0]][nxt[1]].edges):  # type: ignore[attr-defined]
            return nxt
        return None

    def _exit_from(self, cell: tuple[int, int], entry: str) -> str:
        tile = self.map.tiles[cell[0]][cell[1]]  # type: ignore[attr-defined]
        others = sorted(tile.edges - {entry})
        if tile.kind not in INTERSECTION_KINDS:
            return others[0]
        options = [t for t in TURNS if exit_of(entry, t) in tile.edges]
        rng = np.random.default_rng([*self._key, self._visits])
        self._visits += 1
        return exit_of(entry, options[int(rng.integers(len(options)))])

    def _extend(self) -> None:
        """Add the next leg: the next tile's lane, or a U-turn where the road ends."""
        cell, entry, exit_ = self._at
        last = self.legs[-1]
        end = last.start_m + last.length_m
        nxt = self._next_cell(cell, exit_)
        if nxt is not None:
            back = opposite_edge(exit_)
            out = self._exit_from(nxt, back)
            leg = self._tile_leg(nxt, back, out, end)
            self._at = (nxt, back, out)
        else:  # the road ends here: a half circle to the left, into the other lane,
            # of the lane offset's radius (the leg stopped that short of the edge)
            x, y, yaw = last.point(end)
            ex, ey = x - self._right * math.sin(yaw), y + self._right * math.cos(yaw)
            arc = Arc(ex, ey, self._right, yaw - math.pi / 2, math.pi)
            leg = Leg(arc, 0.0, end, math.pi * self._right)
            self._at = (cell, exit_, self._exit_from(cell, exit_))
            self.legs.append(leg)
            self._starts.append(leg.start_m)
            cell, entry, exit_ = self._at
            leg = self._tile_leg(cell, entry, exit_, end + leg.length_m, turned=True)
        self.legs.append(leg)
        self._starts.append(leg.start_m)

    def pose(self, sim_time_s: float) -> tuple[float, float, float]:
        """``(x, y, yaw)`` of the object at simulated time ``sim_time_s`` (>= 0)."""
        s = self.speed_m_s * max(sim_time_s, 0.0)
        while self.legs[-1].start_m + self.legs[-1].length_m < s:
            self._extend()
        i = bisect.bisect_right(self._starts, s) - 1
        return self.legs[max(i, 0)].point(s)


def movers_of(road_map: object, objects: list[MapObject], seed: int) -> dict[int, Mover]:
    """A :class:`Mover` for each moving object, by its index in ``objects``."""
    return {i: Mover(road_map, o, i, seed) for i, o in enumerate(objects) if not o.static}
