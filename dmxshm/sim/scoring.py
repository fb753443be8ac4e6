"""How each robot of a run keeps its lane, drives and collides: one record, kept by the
engine and read by everyone else.

The engine updates a :class:`Scoring` once per published state (:meth:`Scoring.see`)
and tells it of every reset, whichever loop made it (:meth:`Scoring.moved`): a gym
reset and a realtime one count alike. The episodes of outside agents
(:mod:`dmxshm.network.episodes`) read its lane poses and the contacts begun; the run's
summary reads its report (``lane`` in the JSON summary). Taps only read it.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from dmxshm.world.routes import TURNS, Routes
from dmxshm.world.traffic import ahead, static_discs
from dmxshm.world.world import World

STILL_M_S = 0.02
"""A robot slower than this from one state to the next stood still (2 cm/s: the lane
follower cruises at 22)."""

HELD_S = 10.0
"""A robot that stood still longer than this (simulated) is named, with what held it."""

LOOK_M = 0.2
"""How far ahead of a held robot its cause is looked for (the lane follower stops
0.15 m of range short of what its time of flight sees)."""


class Scoring:
    """How well each robot kept its lane, over the published states: worst offset,
    states off the road, how far it drove (path length), its collisions (how often it
    came to touch another robot or an object; a contact that lasts counts once) and
    the longest it stood still, and, where that was longer than :data:`HELD_S`, what
    held it (at the end of that standstill). With routes
    (:class:`~dmxshm.world.routes.Routes`) the lane through an intersection is the
    robot's turn's, and the turns it took and the states it waited at stop lines are
    counted."""

    def __init__(self, world: World, routes: Routes | None = None,
                 state_dt_s: float = 0.0) -> None:
        self.world = world
        self.routes = routes
        self.state_dt_s = state_dt_s
        self._still_m = STILL_M_S * state_dt_s
        n = world.num_robots
        self._still = [0] * n
        self._max_still = [0] * n
        self._held_steps = HELD_S / state_dt_s if state_dt_s > 0 else math.inf
        self._held_by: list[str | None] = [None] * n
        self._discs = static_discs(world.road_map.objects)
        # Plain lists: a realtime engine counts 240 states a second, and numpy's
        # per-call overhead was half of this tap's time at 4 robots.
        self._max_abs_offset_m = [0.0] * n
        self._off_road_steps = [0] * n
        self._distance_m = [0.0] * n
        self._last: list[list[float]] | None = None
        self._robot_hits = [0] * n
        self._object_hits = [0] * n
        self._touching: tuple[set[tuple[int, int]], set[tuple[int, int]]] = (set(), set())
        # Nothing to collide with, nothing to look for: the contacts query costs.
        self._collisions = n > 1 or bool(world.object_ids)
        # The state last counted: each robot's (offset, heading error, on road), and the
        # robots whose contact with a robot or an object began there (what an
        # episode's score reads: dmxshm.network.episodes).
        self.lanes: list[tuple[float, float, bool]] = []
        self.began: set[int] = set()
        self.seconds = 0.0  # the engine's time in this tap (the summary's metrics_s)

    def see(self, step: int, poses: np.ndarray) -> None:
        """Count published state ``step``, given as every robot's ``(x, y, yaw)``: lane
        poses, distance, stand-stills, and the contacts that began since the last
        state."""
        self.update(poses, step)
        if self._collisions:
            t0 = time.perf_counter()
            self.count_collisions()
            self.seconds += time.perf_counter() - t0

    def count_collisions(self) -> None:
        """Count each contact that began since the last call."""
        robots, objects = (set(p) for p in self.world.touching())
        before_r, before_o = self._touching
        began: set[int] = set()
        for i, j in robots - before_r:
            self._robot_hits[i] += 1
            self._robot_hits[j] += 1
            began.update((i, j))
        for i, _ in objects - before_o:
            self._object_hits[i] += 1
            began.add(i)
        self._touching = (robots, objects)
        self.began = began

    def update(self, poses: np.ndarray, step: int | None = None) -> None:
        """Count ``(R, 3)`` poses ``(x, y, yaw)`` (of state ``step``)."""
        t0 = time.perf_counter()
        rows = poses.tolist()
        last, distance = self._last, self._distance_m
        if last is not None:
            for i, (row, before) in enumerate(zip(rows, last, strict=True)):
                moved = math.hypot(row[0] - before[0], row[1] - before[1])
                distance[i] += moved
                self._still[i] = self._still[i] + 1 if moved < self._still_m else 0
                if self._still[i] > self._max_still[i]:
                    self._max_still[i] = self._still[i]
        self._last = rows
        worst = self._max_abs_offset_m
        if self.routes is not None:
            self.routes.see(step, rows)
            lanes = self.routes.lane
        else:
            lane_pose = self.world.road_map.lane_pose
            lanes = [lane_pose(x, y, yaw) for x, y, yaw in rows]
        self.lanes = lanes
        for i, still in enumerate(self._still):
            if still > self._held_steps and still >= self._max_still[i]:  # its longest
                self._held_by[i] = self._cause(i, rows)
        for i, (offset, _heading, on_road) in enumerate(lanes):
            if not on_road:
                self._off_road_steps[i] += 1
            elif math.isfinite(offset) and abs(offset) > worst[i]:
                worst[i] = abs(offset)
        self.seconds += time.perf_counter() - t0

    def _cause(self, i: int, rows: list[list[float]]) -> str:
        """What holds robot ``i`` still now: what the routes hold it for, what is ahead
        of it, what it touches, or nothing (its commands)."""
        if self.routes is not None and self.routes.holds and self.routes.holds[i]:
            return str(self.routes.holds[i])
        obstacle = ahead(i, rows, self._discs, LOOK_M)
        if obstacle is not None:
            return obstacle.describe()
        robots, objects = self._touching
        for a, b in sorted(robots):
            if i in (a, b):
                return f"touching robot {b if a == i else a}"
        for robot, k in sorted(objects):
            if robot == i:
                return f"touching an object ({self.world.objects[k].kind})"
        return "nothing in its way (its commands kept it still)"

    def moved(self, robots: list[int], poses: np.ndarray) -> None:
        """``robots`` were put at ``poses`` (``(R, 3)``, every robot's) between two
        states (a reset): the jump is no distance driven, no stand-still, and a contact
        of theirs there begins anew."""
        if self._last is not None:
            for i in robots:
                self._last[i] = [float(v) for v in poses[i]]
                self._still[i] = 0
        # a contact of theirs at the new poses begins anew (as in a world just reset)
        moved = set(robots)
        robot_pairs, object_pairs = self._touching
        self._touching = ({p for p in robot_pairs if not moved & set(p)},
                          {p for p in object_pairs if p[0] not in moved})

    @property
    def max_abs_offset_m(self) -> np.ndarray:
        """Each robot's worst lane offset so far, m."""
        return np.array(self._max_abs_offset_m)

    @property
    def off_road_steps(self) -> np.ndarray:
        """Each robot's states off the road so far."""
        return np.array(self._off_road_steps, np.int64)

    @property
    def distance_m(self) -> np.ndarray:
        """Each robot's path length so far, m."""
        return np.array(self._distance_m)

    def report(self) -> dict[str, Any]:
        return {"max_abs_offset_m": list(self._max_abs_offset_m),
                "off_road_steps": list(self._off_road_steps),
                "distance_m": list(self._distance_m),
                "robot_collisions": list(self._robot_hits),
                "object_collisions": list(self._object_hits),
                "max_still_s": [k * self.state_dt_s for k in self._max_still],
                "held_by": list(self._held_by),
                **self._routes_report()}

    def _routes_report(self) -> dict[str, Any]:
        if self.routes is None:
            return {}
        taken = self.routes.router.taken
        return {"turns": {t: [row[t] for row in taken] for t in TURNS},
                "stop_line_waits": list(self.routes.right_of_way.waits)}
