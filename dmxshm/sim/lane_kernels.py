"""The lane pose and the routes through intersections of many robots at once, compiled
(numba): :meth:`RoadMap._lane <dmxshm.world.maps.RoadMap._lane>`, :meth:`Router.update
<dmxshm.world.routes.Router.update>` and :meth:`Router.lane
<dmxshm.world.routes.Router.lane>` over arrays, written in the same expressions and the
same order as the Python ones, so that they give the same floats (``tests/sim/
test_lane_kernels.py``).

A map becomes arrays once (:class:`MapArrays`); a robot's route state is a row of
:data:`ROUTE_FIELDS`. A route's *decision* (which turn to take at an intersection
first seen) stays in Python (:meth:`Router._decide
<dmxshm.world.routes.Router._decide>`: a generator keyed by the robot and the count of
its intersections, once per intersection): :func:`route_update` flags the robots that
need one, the caller makes it and writes it into their rows.

What is left out: a lane moved aside to pass an object in an intersection
(:meth:`Router.shift <dmxshm.world.routes.Router.shift>`): these kernels serve maps
without objects (:attr:`MapArrays.has_objects`), where no lane moves.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from dmxshm.world.lanes import Arc, Segment
from dmxshm.world.tiles import EDGE_VECTORS, INTERSECTION_KINDS, WHITE_LINE_WIDTH_M

EDGES = tuple(EDGE_VECTORS)
"""The edges in :data:`~dmxshm.world.tiles.EDGE_VECTORS`' order (a route row's codes)."""
_EV = np.array([EDGE_VECTORS[e] for e in EDGES], float)
_SORTED = np.array([EDGES.index(e) for e in sorted(EDGES)], np.int64)  # sorted(tile.edges)
_OPPOSITE = np.array([EDGES.index({"E": "W", "W": "E", "N": "S", "S": "N"}[e])
                      for e in EDGES], np.int64)
TWO_PI = 2.0 * math.pi

ROUTE_FIELDS = ("has", "row", "col", "entry", "exit", "turn", "inside")
"""A robot's route state (int64): whether it has a decision, the intersection's row and
column, the edges it enters and leaves by (indices of :data:`EDGES`), its turn (-1
left, 0 straight, 1 right) and whether it is inside the intersection now."""
HAS, ROW, COL, ENTRY, EXIT, TURN, INSIDE = range(len(ROUTE_FIELDS))


class MapArrays:
    """A :class:`~dmxshm.world.maps.RoadMap` as the kernels read it."""

    def __init__(self, road_map: object) -> None:
        m: object = road_map
        rows, cols = m.rows, m.cols  # type: ignore[attr-defined]
        paths: list[object] = []
        index: dict[int, int] = {}

        def path_id(p: object) -> int:
            if id(p) not in index:
                index[id(p)] = len(paths)
                paths.append(p)
            return index[id(p)]

        own: list[list[int]] = []
        nearby: list[list[int]] = []
        for r in range(rows):
            for c in range(cols):
                own.append([path_id(p) for p in m._paths[(r, c)]])  # type: ignore[attr-defined]
                nearby.append([path_id(p) for p in m._nearby[(r, c)]])  # type: ignore[attr-defined]
        self.kind = np.array([1 if isinstance(p, Arc) else 0 for p in paths], np.int64)
        self.geometry = np.zeros((len(paths), 5))
        for k, p in enumerate(paths):
            if isinstance(p, Segment):
                self.geometry[k] = (p.x0, p.y0, p.x1, p.y1, 0.0)
            else:
                assert isinstance(p, Arc)
                self.geometry[k] = (p.cx, p.cy, p.radius_m, p.start_rad, p.sweep_rad)
        self.own_start, self.own = _csr(own)
        self.near_start, self.near = _csr(nearby)
        tiles = m.tiles  # type: ignore[attr-defined]
        self.is_road = np.array([t.is_road for row in tiles for t in row], np.bool_)
        self.is_inter = np.array([t.kind in INTERSECTION_KINDS for row in tiles for t in row],
                                 np.bool_)
        self.edges = np.array([[e in t.edges for e in EDGES] for row in tiles for t in row],
                              np.bool_).reshape(rows * cols, 4)
        self.rows, self.cols = int(rows), int(cols)
        self.tile = float(m.tile_size_m)  # type: ignore[attr-defined]
        self.lane_offset = float(m.lane_offset_m)  # type: ignore[attr-defined]
        self.half_width = float(m.road_half_width_m)  # type: ignore[attr-defined]
        self.has_objects = bool(m.objects)  # type: ignore[attr-defined]

    def args(self) -> tuple[Any, ...]:
        """The arrays and numbers every kernel takes, in their order."""
        return (self.kind, self.geometry, self.own_start, self.own, self.near_start,
                self.near, self.is_road, self.is_inter, self.edges, self.rows, self.cols,
                self.tile, self.lane_offset, self.half_width)


def _csr(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    start = np.zeros(len(lists) + 1, np.int64)
    start[1:] = np.cumsum([len(x) for x in lists])
    flat = np.array([i for x in lists for i in x], np.int64)
    return start, flat


# Python's max(a, b) and min(a, b) (the first of equals; NaN as Python orders it).
@njit(cache=True, error_model="numpy")
def _pmax(a: float, b: float) -> float:  # pragma: no cover (compiled)
    return b if b > a else a


@njit(cache=True, error_model="numpy")
def _pmin(a: float, b: float) -> float:  # pragma: no cover (compiled)
    return b if b < a else a


@njit(cache=True, error_model="numpy")
def _mul(x: float, y: float) -> tuple[float, float]:  # pragma: no cover (compiled)
    """x * y as an exact sum of two doubles (Dekker)."""
    t = x * 134217729.0
    xh = t - (t - x)
    xl = x - xh
    t = y * 134217729.0
    yh = t - (t - y)
    yl = y - yh
    p = xh * yh
    q = xh * yl + xl * yh
    z = p + q
    return z, p - z + q + xl * yl


@njit(cache=True, error_model="numpy")
def hypot(x: float, y: float) -> float:  # pragma: no cover (compiled)
    """CPython's ``math.hypot`` of two numbers (its ``vector_norm`` since 3.11), not the
    C library's, which rounds otherwise now and then: the kernels' distances are the
    Python code's to the last bit (checked at import: :data:`HYPOT_IS_PYTHONS`)."""
    ax, ay = abs(x), abs(y)
    mx = 0.0
    if ax > mx:
        mx = ax
    if ay > mx:
        mx = ay
    if math.isinf(mx):
        return mx
    if ax != ax or ay != ay:
        return math.nan
    if mx == 0.0:
        return mx
    unit = 1.0  # subnormals: measured in units of the smallest normal (CPython's way)
    e = math.frexp(mx)[1]
    if e < -1023:
        unit = 2.2250738585072014e-308
        ax, ay, mx = ax / unit, ay / unit, mx / unit
        e = math.frexp(mx)[1]
    scale = math.ldexp(1.0, -e)
    csum, frac1, frac2 = 1.0, 0.0, 0.0
    for v in (ax, ay):
        v = v * scale
        hi, lo = _mul(v, v)
        s = csum + hi
        frac2 += (csum - s) + hi
        csum = s
        frac1 += lo
    h = math.sqrt(csum - 1.0 + (frac1 + frac2))
    hi, lo = _mul(-h, h)
    s = csum + hi
    frac2 += (csum - s) + hi
    csum = s
    frac1 += lo
    v = csum - 1.0 + (frac1 + frac2)
    h += v / (2.0 * h)
    return unit * (h / scale)


@njit(cache=True, error_model="numpy")
def _wrap(a: float) -> float:  # pragma: no cover (compiled)
    return (a + math.pi) % TWO_PI - math.pi


@njit(cache=True, error_model="numpy")
def _project(kind: int, g: np.ndarray, x: float, y: float
             ) -> tuple[float, float, float]:  # pragma: no cover (compiled)
    """Segment.project or Arc.project: (dist, left, yaw)."""
    if kind == 0:
        x0, y0, x1, y1 = g[0], g[1], g[2], g[3]
        length = hypot(x1 - x0, y1 - y0)
        tx, ty = (x1 - x0) / length, (y1 - y0) / length
        rx, ry = x - x0, y - y0
        along = _pmin(_pmax(rx * tx + ry * ty, 0.0), length)
        dist = hypot(rx - along * tx, ry - along * ty)
        return dist, tx * ry - ty * rx, math.atan2(ty, tx)
    cx, cy, radius, start, sweep = g[0], g[1], g[2], g[3], g[4]
    rx, ry = x - cx, y - cy
    r = hypot(rx, ry)
    sign = 1.0 if sweep > 0 else -1.0
    span = abs(sweep)
    travelled = ((math.atan2(ry, rx) - start) * sign) % TWO_PI
    if travelled > span:
        travelled = span if travelled - span < TWO_PI - travelled else 0.0
    angle = start + sign * travelled
    px = cx + radius * math.cos(angle)
    py = cy + radius * math.sin(angle)
    left = (radius - r) * sign
    yaw = _wrap(angle + math.copysign(math.pi / 2, sweep))
    return hypot(x - px, y - py), left, yaw


@njit(cache=True, error_model="numpy")
def _among(kind: np.ndarray, geometry: np.ndarray, own: np.ndarray, near: np.ndarray,
           x: float, y: float, yaw: float, lane_offset: float, half_width: float,
           on_tile: bool) -> tuple[float, float, bool, float]:  # pragma: no cover
    """lane_pose_among: (offset, heading error, on road, curvature)."""
    found = False
    b0, b1, b2, b3 = False, False, 0.0, 0.0
    offset, heading, on_road, curvature = math.nan, math.nan, False, math.nan
    n_own = own.shape[0]
    for k in range(n_own + near.shape[0]):
        is_own = k < n_own
        if not is_own and found and not b0:
            break
        p = own[k] if is_own else near[k - n_own]
        dist, left, lane_yaw = _project(kind[p], geometry[p], x, y)
        heading_err = _wrap(yaw - lane_yaw)
        forward = abs(heading_err) <= math.pi / 2
        if not forward:
            left, heading_err = -left, _wrap(heading_err + math.pi)
        inside = dist <= half_width
        k0, k1 = not inside, not is_own
        k2 = abs(heading_err) if inside else 0.0
        less = False
        if not found:
            less = True
        elif k0 != b0:
            less = k0 < b0
        elif k1 != b1:
            less = k1 < b1
        elif k2 != b2:
            less = k2 < b2
        else:
            less = dist < b3
        if less:
            found = True
            b0, b1, b2, b3 = k0, k1, k2, dist
            curvature = 0.0
            if kind[p] == 1:
                radius, sweep = geometry[p, 2], geometry[p, 4]
                left_turn = (sweep > 0) == forward
                curvature = (1.0 / (radius + lane_offset) if left_turn
                             else -1.0 / (radius - lane_offset))
            offset, heading, on_road = left + lane_offset, heading_err, inside and on_tile
    return offset, heading, on_road, curvature


@njit(cache=True, error_model="numpy")
def _cell(x: float, y: float, rows: int, cols: int, tile: float) -> int:  # pragma: no cover
    """RoadMap.cell_of as ``row * cols + col``, -1 off the map."""
    col = int(math.floor(x / tile))
    row = rows - 1 - int(math.floor(y / tile))
    if 0 <= row < rows and 0 <= col < cols:
        return row * cols + col
    return -1


@njit(cache=True, error_model="numpy")
def _road_lane(kind: np.ndarray, geometry: np.ndarray, own_start: np.ndarray,
               own: np.ndarray, near_start: np.ndarray, near: np.ndarray,
               is_road: np.ndarray, rows: int, cols: int, tile: float, lane_offset: float,
               half_width: float, x: float, y: float,
               yaw: float) -> tuple[float, float, bool, float]:  # pragma: no cover
    """RoadMap._lane."""
    cell = _cell(x, y, rows, cols, tile)
    if cell < 0:
        col = min(max(int(math.floor(x / tile)), 0), cols - 1)
        row = min(max(rows - 1 - int(math.floor(y / tile)), 0), rows - 1)
        cx, cy = (col + 0.5) * tile, (rows - 1 - row + 0.5) * tile
        if hypot(x - cx, y - cy) > 1.5 * tile:
            return _among(kind, geometry, own[0:0], near[0:0], x, y, yaw, lane_offset,
                          half_width, False)
        cell = row * cols + col
        on_tile = False
    else:
        on_tile = is_road[cell]
    return _among(kind, geometry, own[own_start[cell]:own_start[cell + 1]],
                  near[near_start[cell]:near_start[cell + 1]], x, y, yaw, lane_offset,
                  half_width, on_tile)


@njit(cache=True, error_model="numpy")
def road_lanes(kind: np.ndarray, geometry: np.ndarray, own_start: np.ndarray,
               own: np.ndarray, near_start: np.ndarray, near: np.ndarray,
               is_road: np.ndarray, is_inter: np.ndarray, edges: np.ndarray, rows: int,
               cols: int, tile: float, lane_offset: float, half_width: float,
               x: np.ndarray, y: np.ndarray, yaw: np.ndarray,
               out: np.ndarray) -> None:  # pragma: no cover (compiled)
    """:meth:`RoadMap._lane` of every robot: ``out`` (n, 4) gets offset, heading error,
    on road (0 or 1) and curvature."""
    for i in range(x.shape[0]):
        o, h, on, c = _road_lane(kind, geometry, own_start, own, near_start, near, is_road,
                                 rows, cols, tile, lane_offset, half_width, x[i], y[i],
                                 yaw[i])
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = o, h, 1.0 if on else 0.0, c


@njit(cache=True, error_model="numpy")
def _intersection(cell_r: int, cell_c: int, rows: int, cols: int,
                  is_inter: np.ndarray) -> bool:  # pragma: no cover (compiled)
    return 0 <= cell_r < rows and 0 <= cell_c < cols and is_inter[cell_r * cols + cell_c]


@njit(cache=True, error_model="numpy")
def route_update(kind: np.ndarray, geometry: np.ndarray, own_start: np.ndarray,
                 own: np.ndarray, near_start: np.ndarray, near: np.ndarray,
                 is_road: np.ndarray, is_inter: np.ndarray, edges: np.ndarray, rows: int,
                 cols: int, tile: float, lane_offset: float, half_width: float,
                 x: np.ndarray, y: np.ndarray, yaw: np.ndarray, state: np.ndarray,
                 need: np.ndarray) -> int:  # pragma: no cover (compiled)
    """:meth:`Router.update` of every robot (``state`` (n, 7), :data:`ROUTE_FIELDS`, in
    place), but for the decisions: a robot that needs one gets ``need[i] = (row, col,
    entry, inside)`` (else ``need[i, 0] = -1``) and its row's ``has`` stays 0 until the
    caller writes the decision. The number of robots that need one."""
    count = 0
    for i in range(x.shape[0]):
        need[i, 0] = -1
        px, py = x[i], y[i]
        cell = _cell(px, py, rows, cols, tile)
        cr, cc = (cell // cols, cell % cols) if cell >= 0 else (-1, -1)
        has = state[i, HAS] == 1
        if cell >= 0 and is_inter[cell]:
            if not has or state[i, ROW] != cr or state[i, COL] != cc:
                # entered without being seen on the way in: by the nearest edge
                cx, cy = (cc + 0.5) * tile, (rows - 1 - cr + 0.5) * tile
                best, entry = 0.0, -1
                for e in range(4):
                    v = (px - cx) * _EV[e, 0] + (py - cy) * _EV[e, 1]
                    if entry < 0 or v > best:
                        best, entry = v, e
                state[i, HAS] = 0
                need[i, 0], need[i, 1], need[i, 2], need[i, 3] = cr, cc, entry, 1
                count += 1
            else:
                state[i, INSIDE] = 1
            continue
        if has and state[i, INSIDE] == 1:  # just left it
            state[i, HAS] = 0
            has = False
        # the intersection ahead (Router._ahead)
        target_r, target_c, entry = -1, -1, -1
        if cell >= 0 and is_road[cell]:
            cx, cy = (cc + 0.5) * tile, (rows - 1 - cr + 0.5) * tile
            co, si = math.cos(yaw[i]), math.sin(yaw[i])
            for k in range(4):
                e = _SORTED[k]
                if not edges[cell, e]:
                    continue
                dx, dy = _EV[e, 0], _EV[e, 1]
                if (px - cx) * dx + (py - cy) * dy <= 0 or co * dx + si * dy < 0.5:
                    continue
                nr, nc = cr - int(dy), cc + int(dx)
                back = _OPPOSITE[e]
                if _intersection(nr, nc, rows, cols, is_inter) and edges[nr * cols + nc, back]:
                    target_r, target_c, entry = nr, nc, back
                    break
        if entry < 0:
            state[i, HAS] = 0
            continue
        if (not has or state[i, ROW] != target_r or state[i, COL] != target_c
                or state[i, ENTRY] != entry):
            state[i, HAS] = 0
            need[i, 0], need[i, 1], need[i, 2], need[i, 3] = target_r, target_c, entry, 0
            count += 1
    return count


@njit(cache=True, error_model="numpy")
def route_lanes(kind: np.ndarray, geometry: np.ndarray, own_start: np.ndarray,
                own: np.ndarray, near_start: np.ndarray, near: np.ndarray,
                is_road: np.ndarray, is_inter: np.ndarray, edges: np.ndarray, rows: int,
                cols: int, tile: float, lane_offset: float, half_width: float,
                x: np.ndarray, y: np.ndarray, yaw: np.ndarray, state: np.ndarray,
                out: np.ndarray) -> None:  # pragma: no cover (compiled)
    """:meth:`Router.lane` of every robot (after :func:`route_update` and the decisions),
    into ``out`` as :func:`road_lanes`'."""
    g = np.empty(5)
    one = np.zeros(1, np.int64)
    kinds = np.zeros(1, np.int64)
    for i in range(x.shape[0]):
        px, py = x[i], y[i]
        if state[i, HAS] != 1 or state[i, INSIDE] != 1:
            o, h, on, c = _road_lane(kind, geometry, own_start, own, near_start, near,
                                     is_road, rows, cols, tile, lane_offset, half_width,
                                     px, py, yaw[i])
            out[i, 0], out[i, 1], out[i, 2], out[i, 3] = o, h, 1.0 if on else 0.0, c
            continue
        cr, cc = state[i, ROW], state[i, COL]
        cx, cy = (cc + 0.5) * tile, (rows - 1 - cr + 0.5) * tile
        hh = tile / 2
        a, b = state[i, ENTRY], state[i, EXIT]
        sx, sy = cx + hh * _EV[a, 0], cy + hh * _EV[a, 1]
        ex, ey = cx + hh * _EV[b, 0], cy + hh * _EV[b, 1]
        if b == _OPPOSITE[a]:
            kinds[0] = 0
            g[0], g[1], g[2], g[3], g[4] = sx, sy, ex, ey, 0.0
        else:
            kinds[0] = 1
            kx = cx + hh * (_EV[a, 0] + _EV[b, 0])
            ky = cy + hh * (_EV[a, 1] + _EV[b, 1])
            a0 = math.atan2(sy - ky, sx - kx)
            a1 = math.atan2(ey - ky, ex - kx)
            g[0], g[1], g[2], g[3], g[4] = kx, ky, hh, a0, _wrap(a1 - a0)
        o, h, on, c = _among(kinds, g.reshape(1, 5), one, one[0:0], px, py, yaw[i],
                             lane_offset, tile / 2, True)
        cell = cr * cols + cc
        on = True
        for e in range(4):
            if not edges[cell, e] and not (
                    hh - ((px - cx) * _EV[e, 0] + (py - cy) * _EV[e, 1])
                    >= WHITE_LINE_WIDTH_M):
                on = False
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = o - 0.0, h, 1.0 if on else 0.0, c


@njit(cache=True, error_model="numpy")
def record_poses(records: np.ndarray, x: np.ndarray, y: np.ndarray,
                 yaw: np.ndarray) -> None:  # pragma: no cover (compiled)
    """Each state record's position and heading as a DuckieLane env reads them (the yaw
    of its quaternion)."""
    for i in range(records.shape[0]):
        r = records[i]
        qx, qy, qz, qw = r[3], r[4], r[5], r[6]
        x[i], y[i] = r[0], r[1]
        yaw[i] = math.atan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))


def _hypot_is_pythons() -> bool:
    rng = np.random.default_rng(0)
    wide = rng.normal(0.0, 1.0, (500, 2)) * 10.0 ** rng.integers(-300, 300, (500, 1))
    values = np.concatenate([rng.normal(0.0, 1.0, (4000, 2)), wide,
                             [[0.0, 0.0], [3.0, 4.0], [0.0, 5e-324], [1e308, 1e308]]])
    return all(hypot(a, b) == math.hypot(a, b) for a, b in values.tolist())


HYPOT_IS_PYTHONS = _hypot_is_pythons()
"""Whether :func:`hypot` gives this Python's ``math.hypot`` on 4,504 pairs (CPython's
algorithm changed in 3.11; where it differs, the batch steps env by env)."""
