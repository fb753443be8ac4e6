"""Routes through intersections: which way each robot turns, the lane it follows
through the intersection, and who goes first at the stop lines.

With routes on (``NetworkConfig.route``, ``--route``), a robot approaching a 3-way
or a 4-way is given a turn: ``left``, ``straight`` or ``right``, among those the
intersection offers from the edge it enters by. The turn is the next of a given
list (``--route left,straight,right``, cycled per robot, an impossible turn skipped
for the next possible one; where none of the list's turns is possible, straight on
if it can, else the first of left, straight, right it offers) or drawn by the seed
(``--route seed``: a generator keyed by the run's seed, the robot and the count of
its intersections, so every process that follows the robot draws the same turns).
Inside the intersection the robot's lane is the turn's path: the straight segment
between the two edges, or the quarter circle of half a tile around the corner
between them (the centreline of a curve tile, so a right turn's lane has the
curve's inner radius and a left turn's its outer one). The lane pose is then
measured against that path only, so offset and heading are continuous across the
tile borders and through the intersection.

Who goes first (:class:`RightOfWay`): a robot within :data:`STOP_ZONE_M` of an
intersection it is about to enter has *arrived*; it may enter when no robot is in
the intersection and it arrived first among those waiting there, ties going to the
lower robot index. One robot at a time per intersection, and a robot in it is never
held, so no two robots wait on each other there. A robot's ``may_go`` is 1 except
while it waits, or while a robot or an object of the map is close ahead of it
(:class:`Routes`; :mod:`dmxshm.world.traffic`). The one robot in an intersection has
all of it: its lane there moves aside to pass an object standing in it
(:meth:`Router.shift`), and a turn that no such move clears is not offered.

Decisions are a function of the sequence of robot poses a process sees: exact and
the same in every process in gym mode (every process sees every state); in
realtime a renderer samples the states at its own rate, so two renderers may order
two arrivals that fall within one sample of each other differently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dmxshm.errors import DmxError
from dmxshm.world.lanes import Arc, LanePose, Path, Segment, lane_pose_among, wrap_angle
from dmxshm.world.tiles import (
    EDGE_VECTORS,
    INTERSECTION_KINDS,
    WHITE_LINE_WIDTH_M,
    opposite_edge,
    rotate_edge,
)
from dmxshm.world.traffic import Obstacle, ahead, lane_shift, robot_centres, static_discs

TURNS = ("left", "straight", "right")
"""The turns a route is made of."""

TURN_CODE = {"left": -1.0, "straight": 0.0, "right": 1.0}
"""A turn as the observation's ``route[0]`` gives it (nan: no intersection ahead)."""

STOP_ZONE_M = 0.2
"""A robot whose centre is this close to an intersection's edge, on its way in, has
arrived at the stop line."""

SHIFT_RAMP_M = 0.25
"""Over this distance before an intersection (and after it) a robot whose lane through
it is moved aside (:func:`~dmxshm.world.traffic.lane_shift`) moves over to it (and
back)."""


class RouteError(DmxError, ValueError):
    """A route was given a turn that does not exist."""


def parse_route(text: str | None) -> tuple[str, ...] | None:
    """``None`` (routes off), ``()`` for ``seed``, or the turns of a list.

    Example:
        >>> parse_route("left,straight,right"), parse_route("seed"), parse_route(None)
        (('left', 'straight', 'right'), (), None)
    """
    if text is None:
        return None
    if text.strip() == "seed":
        return ()
    turns = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [t for t in turns if t not in TURNS]
    if not turns or bad:
        raise RouteError(f"route {text!r}: give 'seed' or turns from {', '.join(TURNS)}, "
                         "comma-separated (e.g. left,straight,right)")
    return turns


def turn_of(entry: str, exit_: str) -> str | None:
    """The turn of a robot that enters a tile by edge ``entry`` and leaves by ``exit_``.

    Example:
        >>> turn_of("W", "E"), turn_of("W", "N"), turn_of("W", "S"), turn_of("W", "W")
        ('straight', 'left', 'right', None)
    """
    heading = opposite_edge(entry)  # it drives towards the facing edge
    if exit_ == heading:
        return "straight"
    if exit_ == rotate_edge(heading, 90):
        return "left"
    if exit_ == rotate_edge(heading, 270):
        return "right"
    return None


def exit_of(entry: str, turn: str) -> str:
    """The edge a turn leaves by (the inverse of :func:`turn_of`)."""
    heading = opposite_edge(entry)
    return {"straight": heading, "left": rotate_edge(heading, 90),
            "right": rotate_edge(heading, 270)}[turn]


def turn_path(cx: float, cy: float, size: float, entry: str, exit_: str) -> Path:
    """The centreline a robot follows through the tile centred at ``(cx, cy)`` from edge
    ``entry`` to edge ``exit_``, in its direction of travel.

    Example:
        >>> turn_path(0.0, 0.0, 1.0, "W", "E")
        Segment(x0=-0.5, y0=0.0, x1=0.5, y1=0.0)
        >>> a = turn_path(0.0, 0.0, 1.0, "W", "S")  # a right turn round the SW corner
        >>> (a.cx, a.cy, a.radius_m, round(a.sweep_rad, 4))
        (-0.5, -0.5, 0.5, -1.5708)
    """
    h = size / 2
    ex, ey = EDGE_VECTORS[entry]
    xx, xy = EDGE_VECTORS[exit_]
    start = (cx + h * ex, cy + h * ey)
    end = (cx + h * xx, cy + h * xy)
    if exit_ == opposite_edge(entry):
        return Segment(start[0], start[1], end[0], end[1])
    corner = (cx + h * (ex + xx), cy + h * (ey + xy))
    a0 = math.atan2(start[1] - corner[1], start[0] - corner[0])
    a1 = math.atan2(end[1] - corner[1], end[0] - corner[0])
    return Arc(corner[0], corner[1], h, a0, wrap_angle(a1 - a0))


@dataclass
class RouteState:
    """One robot's decision for the intersection ahead of it or under it.

    Attributes:
        cell: the intersection's ``(row, col)``.
        entry: the edge it enters by; ``exit``: the edge it leaves by; ``turn``.
        inside: whether the robot is in the intersection now.
        arrived: the step at which it reached the stop line (None: not yet).
        shift_m: how far left (+) or right (-) of its lane the robot drives through
            the intersection, to pass an object standing there (0.0: none).
    """

    cell: tuple[int, int]
    entry: str
    exit: str
    turn: str
    inside: bool = False
    arrived: int | None = None
    shift_m: float = 0.0


@dataclass
class Router:
    """Every robot's route decisions, updated pose by pose (see the module docstring).

    Args:
        road_map: the map (a :class:`~dmxshm.world.maps.RoadMap`).
        robots: how many robots.
        seed: the run's seed (turns drawn by it when ``turns`` is empty).
        turns: the route's list of turns, cycled per robot; ``()``: by the seed.

    Attributes:
        states: each robot's decision (None: no intersection ahead).
        taken: per robot, how many intersections it went through by each turn.
    """

    road_map: object
    robots: int
    seed: int = 0
    turns: tuple[str, ...] = ()
    states: list[RouteState | None] = field(init=False)
    taken: list[dict[str, int]] = field(init=False)
    _visits: list[int] = field(init=False)
    _next: list[int] = field(init=False)
    _left: list[RouteState | None] = field(init=False)
    _shifts: dict[tuple[tuple[int, int], str, str], float | None] = field(init=False)

    def __post_init__(self) -> None:
        self.states = [None] * self.robots
        self.taken = [dict.fromkeys(TURNS, 0) for _ in range(self.robots)]
        self._visits = [0] * self.robots
        self._next = [0] * self.robots
        self._left = [None] * self.robots  # the intersection just left, if shifted
        self.discs = static_discs(getattr(self.road_map, "objects", ()))
        self._shifts = {}

    def shift(self, cell: tuple[int, int], entry: str, exit_: str) -> float | None:
        """How far aside of its lane a robot drives from ``entry`` to ``exit_`` through
        the intersection ``cell`` to pass the map's objects there (None: it cannot)."""
        key = (cell, entry, exit_)
        if key not in self._shifts:
            m = self.road_map
            if not self.discs:
                self._shifts[key] = 0.0
            else:
                cx, cy = m.tile_center(*cell)  # type: ignore[attr-defined]
                path = turn_path(cx, cy, m.tile_size_m, entry, exit_)  # type: ignore[attr-defined]
                self._shifts[key] = lane_shift(path, m.lane_offset_m,  # type: ignore[attr-defined]
                                               self.discs)
        return self._shifts[key]

    def _open_edges(self, cell: tuple[int, int]) -> frozenset[str]:
        return self.road_map.tiles[cell[0]][cell[1]].edges  # type: ignore[attr-defined]

    def _is_intersection(self, cell: tuple[int, int] | None) -> bool:
        m = self.road_map
        if cell is None or not (0 <= cell[0] < m.rows and 0 <= cell[1] < m.cols):  # type: ignore[attr-defined]
            return False  # off the map (a road may end at its border)
        return m.tiles[cell[0]][cell[1]].kind in INTERSECTION_KINDS  # type: ignore[attr-defined]

    def _decide(self, i: int, cell: tuple[int, int], entry: str) -> RouteState:
        edges = self._open_edges(cell)
        options = [t for t in TURNS if exit_of(entry, t) in edges]
        # A turn that an object standing in the intersection bars is not offered.
        passable = [t for t in options if self.shift(cell, entry, exit_of(entry, t)) is not None]
        options = passable or options
        visit = self._visits[i]
        self._visits[i] += 1
        if not options:  # an intersection entered by a closed edge: straight on
            return RouteState(cell, entry, opposite_edge(entry), "straight")
        if self.turns:
            # The next of the route's turns this intersection offers; where it offers
            # none of them, straight on if it can, else its first turn.
            turn = "straight" if "straight" in options else options[0]
            for k in range(len(self.turns)):
                candidate = self.turns[(self._next[i] + k) % len(self.turns)]
                if candidate in options:
                    turn = candidate
                    self._next[i] = (self._next[i] + k + 1) % len(self.turns)
                    break
        else:
            rng = np.random.default_rng([self.seed, i, visit])
            turn = options[int(rng.integers(len(options)))]
        exit_ = exit_of(entry, turn)
        return RouteState(cell, entry, exit_, turn, shift_m=self.shift(cell, entry, exit_) or 0.0)

    def update(self, i: int, x: float, y: float, yaw: float) -> RouteState | None:
        """Robot ``i`` is at ``(x, y, yaw)``: its decision for the intersection ahead of
        it or under it, made when it first comes near."""
        m = self.road_map
        cell = m.cell_of(x, y)  # type: ignore[attr-defined]
        state = self.states[i]
        if self._is_intersection(cell):
            assert cell is not None
            if state is not None and state.inside and state.cell != cell:
                # Straight from one intersection into the next: the first is done.
                self.taken[i][state.turn] += 1
                self._left[i] = None
            if state is None or state.cell != cell:
                # Entered without being seen on the way in: by the edge it is nearest.
                entry = self._nearest_edge(cell, x, y)
                state = self._decide(i, cell, entry)
            state.inside = True
            self.states[i] = state
            return state
        if state is not None and state.inside:  # just left it
            self.taken[i][state.turn] += 1
            self._left[i] = state if state.shift_m else None
            state = self.states[i] = None
        ahead = self._ahead(cell, x, y, yaw)
        if ahead is None:
            self.states[i] = None
            return None
        target, entry = ahead
        if state is None or state.cell != target or state.entry != entry:
            state = self.states[i] = self._decide(i, target, entry)
        return state

    def _nearest_edge(self, cell: tuple[int, int], x: float, y: float) -> str:
        cx, cy = self.road_map.tile_center(*cell)  # type: ignore[attr-defined]
        return max(EDGE_VECTORS, key=lambda e: (x - cx) * EDGE_VECTORS[e][0]
                   + (y - cy) * EDGE_VECTORS[e][1])

    def _ahead(self, cell: tuple[int, int] | None, x: float, y: float,
               yaw: float) -> tuple[tuple[int, int], str] | None:
        """The intersection the robot drives into from its tile, and the edge it enters
        by: the neighbour across the open edge the robot is in the half of and heading
        to."""
        if cell is None:
            return None
        m = self.road_map
        tile = m.tiles[cell[0]][cell[1]]  # type: ignore[attr-defined]
        if not tile.is_road:
            return None
        cx, cy = m.tile_center(*cell)  # type: ignore[attr-defined]
        c, s = math.cos(yaw), math.sin(yaw)
        for edge in sorted(tile.edges):
            dx, dy = EDGE_VECTORS[edge]
            if (x - cx) * dx + (y - cy) * dy <= 0 or c * dx + s * dy < 0.5:
                continue
            nxt = (cell[0] - dy, cell[1] + dx)
            if self._is_intersection(nxt) and opposite_edge(edge) in self._open_edges(nxt):
                return nxt, opposite_edge(edge)
        return None

    def lane(self, i: int, x: float, y: float, yaw: float) -> tuple[LanePose, float]:
        """Robot ``i``'s lane pose and curvature: against its turn's path in an
        intersection, as :meth:`RoadMap.lane_pose` elsewhere; where its lane through
        the intersection is moved aside (:attr:`RouteState.shift_m`), against that line,
        which it joins over :data:`SHIFT_RAMP_M` before and leaves over as much after.
        Call after :meth:`update` for the same pose."""
        m = self.road_map
        state = self.states[i]
        if state is None or not state.inside:
            lane, curvature = m._lane(x, y, yaw)  # type: ignore[attr-defined]
            if state is not None and state.shift_m:  # on its way in
                return self._shifted(lane, state, x, y, -1.0), curvature
            left = self._left[i]
            if left is not None:  # on its way out
                if self._beyond(left, left.exit, x, y) < SHIFT_RAMP_M:
                    return self._shifted(lane, left, x, y, 1.0), curvature
                self._left[i] = None
            return lane, curvature
        cx, cy = m.tile_center(*state.cell)  # type: ignore[attr-defined]
        size = m.tile_size_m  # type: ignore[attr-defined]
        path = turn_path(cx, cy, size, state.entry, state.exit)
        lane, curvature = lane_pose_among((path,), (), x, y, yaw,
                                          lane_offset_m=m.lane_offset_m,  # type: ignore[attr-defined]
                                          road_half_width_m=size / 2, on_road_tile=True)
        # The whole intersection is road, but for the white line along a closed edge.
        h = size / 2
        edges = self._open_edges(state.cell)
        on = all(h - ((x - cx) * dx + (y - cy) * dy) >= WHITE_LINE_WIDTH_M
                 for e, (dx, dy) in EDGE_VECTORS.items() if e not in edges)
        return LanePose(lane.offset_m - state.shift_m, lane.heading_err_rad, on), curvature

    def _beyond(self, state: RouteState, edge: str, x: float, y: float) -> float:
        """How far ``(x, y)`` is outside ``state``'s intersection, past ``edge``."""
        m = self.road_map
        cx, cy = m.tile_center(*state.cell)  # type: ignore[attr-defined]
        dx, dy = EDGE_VECTORS[edge]
        return (x - cx) * dx + (y - cy) * dy - m.tile_size_m / 2  # type: ignore[attr-defined]

    def _shifted(self, lane: LanePose, state: RouteState, x: float, y: float,
                 direction: float) -> LanePose:
        """``lane`` against the line ``state.shift_m`` aside, reached in a half cosine
        over :data:`SHIFT_RAMP_M` from the intersection's edge (``direction``: -1 on the
        way in, the line coming nearer as the robot drives; 1 on the way out)."""
        edge = state.entry if direction < 0 else state.exit
        d = max(self._beyond(state, edge, x, y), 0.0)
        if d >= SHIFT_RAMP_M or not math.isfinite(lane.offset_m):
            return lane
        u = math.pi * d / SHIFT_RAMP_M
        weight = 0.5 * (1.0 + math.cos(u))
        # The line's slope along the robot's way: its heading is turned by as much.
        slope = -direction * state.shift_m * 0.5 * math.pi / SHIFT_RAMP_M * math.sin(u)
        return LanePose(lane.offset_m - state.shift_m * weight,
                        lane.heading_err_rad - math.atan(slope), lane.on_road)


@dataclass
class RightOfWay:
    """First come, first served at every intersection (see the module docstring).

    Attributes:
        waits: per robot, the steps it spent held at a stop line.
        reasons: per robot, why it is held at a stop line now (None: it is not).
    """

    router: Router
    waits: list[int] = field(init=False)
    reasons: list[str | None] = field(init=False)

    def __post_init__(self) -> None:
        self.waits = [0] * self.router.robots
        self.reasons = [None] * self.router.robots

    def update(self, step: int, poses: list[tuple[float, float, float]]) -> list[bool]:
        """Every robot's ``may_go`` after the router saw ``poses`` (the same step's)."""
        r = self.router
        m = r.road_map
        inside: dict[tuple[int, int], int] = {}
        waiting: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for i, (x, y, _yaw) in enumerate(poses):
            state = r.states[i]
            if state is None:
                continue
            if state.inside:
                inside.setdefault(state.cell, i)
                continue
            cx, cy = m.tile_center(*state.cell)  # type: ignore[attr-defined]
            dx, dy = EDGE_VECTORS[state.entry]
            h = m.tile_size_m / 2  # type: ignore[attr-defined]
            # Distance from the robot to the intersection's edge, from outside.
            gap = (x - cx) * dx + (y - cy) * dy - h
            if gap <= STOP_ZONE_M:
                if state.arrived is None:
                    state.arrived = step
                waiting.setdefault(state.cell, []).append((state.arrived, i))
        go = [True] * len(poses)
        self.reasons = [None] * len(poses)
        for cell, queue in waiting.items():
            first = min(queue)[1]
            for _, i in queue:
                if i != first or cell in inside:
                    go[i] = False
                    self.waits[i] += 1
                    who = (f"robot {inside[cell]} in it" if cell in inside
                           else f"robot {first} arrived first")
                    self.reasons[i] = f"waiting at the intersection ({who})"
        return go


@dataclass
class Routes:
    """A :class:`Router` and a :class:`RightOfWay` over every robot, seen once per step:
    what a renderer's ``lane`` and ``route`` pseudo-sensors and the engine's lane
    figures read.

    A robot may go when the right of way lets it and nothing is in its way: a robot or
    an object of the map within :data:`~dmxshm.world.traffic.STOP_GAP_M` ahead of it
    (:func:`~dmxshm.world.traffic.ahead`) holds it, as a Duckiebot waits behind what
    blocks its lane; of two robots each in the other's way, the lower index goes.

    Attributes:
        lane: per robot, ``(offset_m, heading_err_rad, on_road)`` of the last step seen.
        curvature: per robot, its lane's curvature there (1/m, + left; a turn's through
            an intersection).
        route: per robot, ``(turn code, may_go)`` (:data:`TURN_CODE`; nan: none ahead).
        holds: per robot, what holds it now (None: it may go): ``robot 5 ahead
            0.08 m``, ``an object (cone) ahead 0.02 m``, ``waiting at the
            intersection (robot 2 in it)``.
    """

    router: Router
    right_of_way: RightOfWay = field(init=False)
    lane: list[tuple[float, float, bool]] = field(init=False, default_factory=list)
    curvature: list[float] = field(init=False, default_factory=list)
    route: list[tuple[float, float]] = field(init=False, default_factory=list)
    holds: list[str | None] = field(init=False, default_factory=list)
    _step: int | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.right_of_way = RightOfWay(self.router)

    @classmethod
    def of(cls, road_map: object, robots: int, seed: int, turns: tuple[str, ...]) -> Routes:
        return cls(Router(road_map, robots, seed, turns))

    def see(self, step: int | None, poses: list[tuple[float, float, float]]) -> None:
        """Update every robot from its pose at ``step`` (once a step; again is a no-op;
        a ``step`` of None always updates)."""
        if step is not None and step == self._step:
            return
        self._step = step
        r = self.router
        states = [r.update(i, x, y, yaw) for i, (x, y, yaw) in enumerate(poses)]
        go = self.right_of_way.update(step if step is not None else 0, poses)
        holds = list(self.right_of_way.reasons)
        centres = robot_centres(poses)
        blocked = [ahead(i, poses, r.discs, centres=centres) for i in range(len(poses))]
        for i, obstacle in enumerate(blocked):
            if obstacle is None or not _held_by(i, obstacle, blocked):
                continue
            go[i] = False
            holds[i] = obstacle.describe()
        self.holds = holds
        self.lane, self.curvature = [], []
        for i, (x, y, yaw) in enumerate(poses):
            lane, curvature = r.lane(i, x, y, yaw)
            self.lane.append((lane.offset_m, lane.heading_err_rad, lane.on_road))
            self.curvature.append(curvature)
        self.route = [(TURN_CODE[s.turn] if s is not None else math.nan, float(g))
                      for s, g in zip(states, go, strict=True)]


def _held_by(i: int, obstacle: Obstacle, blocked: list[Obstacle | None]) -> bool:
    """Whether ``obstacle`` ahead of robot ``i`` holds it: always, but where it is a
    robot that has ``i`` ahead of it in turn, which the lower index of the two passes."""
    j = obstacle.robot
    if j is None:
        return True
    other = blocked[j]
    return other is None or other.robot != i or i > j
