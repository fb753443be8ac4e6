"""A shard that steps its multi-robot worlds as arrays: the worlds of R robots each
(:class:`~dmxshm.batch.lanes.MultiLane`, ``make_vec(..., robots_per_world=R)``) go
through the DB18 step, the robots' contacts and the map's edges, the time of flight,
the routes, the lane pose, the sensors with their noise, the scoring and the digest
in one compiled call per stage for every robot of the shard
(:mod:`dmxshm.sim.planar_kernels`, :mod:`dmxshm.sim.lane_kernels`,
:func:`dmxshm.sim.lane_measure.measure_multi`), not a Python call per world.

As :class:`~dmxshm.batch.array_shard.ArrayShard` for the worlds of one robot: a reset
and a close go through each world's own code, and the shard then takes the world's
state into its arrays (:meth:`MultiArrayShard.adopt`); the rows are the world's own bit
for bit (observations, rewards, flags, infos and the digest;
``tests/batch/test_multi_array_shard.py`` steps both ways and compares).

Which shards step this way (:func:`eligible`): multi-robot worlds of two robots or more
under ``physics="db18"`` with state observations, on a map without objects, in the
``NextStep`` or ``Disabled`` autoreset mode. Any other steps world by world.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dmxshm.batch import array_shard
from dmxshm.batch.array_shard import ArrayShard
from dmxshm.batch.lanes import MultiLane
from dmxshm.batch.shard import DISABLED, NEXT_STEP, Shard
from dmxshm.matrix.noise import SAMPLE_BLOCK, bulk_normals
from dmxshm.sim import db18_kernels as kernels
from dmxshm.sim import footprints as fp
from dmxshm.sim import lane_kernels as lk
from dmxshm.sim import planar_kernels as pk
from dmxshm.sim.db18 import DB18, WHEEL_DISTANCE_M, WHEEL_RADIUS_M
from dmxshm.sim.lane_measure import measure_multi
from dmxshm.sim.obs import NO_TARGET_M
from dmxshm.sim.planar import CONTACT_DISTANCE_M, PUSH_ITERATIONS
from dmxshm.world.state import ROBOT_STATE_DTYPE

_FLOATS = ROBOT_STATE_DTYPE.itemsize // 8
_DISCS = np.array(fp.ROBOT_DISCS, float)
_R = fp.ROBOT_DISC_RADIUS_M


def eligible(worlds: list[Any], mode: str) -> bool:
    """Whether a shard of ``worlds`` steps as arrays (the module docstring)."""
    if not (array_shard.ENABLED and lk.HYPOT_IS_PYTHONS and worlds
            and mode in (NEXT_STEP, DISABLED)):
        return False
    first = worlds[0]
    if type(first) is not MultiLane or first.robots < 2:
        return False
    same = ("robots", "max_episode_steps", "offset_penalty", "collision_penalty",
            "end_on_collision", "route_turns")
    for w in worlds:
        if (type(w) is not MultiLane or w.physics != "db18" or w.obs_kind != "state"
                or any(getattr(w, k) != getattr(first, k) for k in same)
                or w.world.road_map.objects or not getattr(w.world, "walls", False)
                or w.world.road_map.digest() != first.world.road_map.digest()
                or w.world.dt_s != first.world.dt_s
                or w.world.substeps != first.world.substeps
                or w.tof != first.tof):
            return False
    return True


class MultiArrayShard(ArrayShard):
    """A :class:`~dmxshm.batch.shard.Shard` of multi-robot worlds whose steps are array
    calls (the module docstring); its resets are its worlds'. Its arrays have a row per
    robot (world ``u``'s robot ``i`` at ``u * R + i``), its digests one per world."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        Shard.__init__(self, *args, **kwargs)
        worlds = self.worlds
        e, r = len(worlds), self.robots
        n = e * r
        first = worlds[0]
        self.map = lk.MapArrays(first.world.road_map)
        self.routed = first.route_turns is not None
        self.dt, self.substeps = first.world.dt_s, first.world.substeps
        self.width, self.height = first.world.road_map.size_m
        self.tof = first.tof
        self.low, self.high = first.state_low, first.state_high
        self.max_steps = int(first.max_episode_steps or 0)
        self.model = DB18([w.world.model.params[i] for w in worlds for i in range(r)])
        self.steps = np.zeros(e, np.int64)
        self.active = np.zeros(n, np.bool_)
        self.touch = np.zeros((e, r, r), np.bool_)  # robot pairs (a < b) touching
        self.route = np.zeros((n, len(lk.ROUTE_FIELDS)), np.int64)
        self.noisy = np.zeros(n, np.bool_)
        self.no_target = np.full(n, NO_TARGET_M)
        self.tof_model = np.zeros((n, 3))  # sigma, sigma per metre, the model's range
        self.block = np.full(n, -1, np.int64)
        self.blocks = np.zeros((n, SAMPLE_BLOCK, 6))
        self.tof_blocks = np.zeros((n, SAMPLE_BLOCK))
        self.turn_on = np.zeros((n, 6))
        self.walk = np.zeros((n, 2, 6))
        self.knots = np.zeros(n, np.int64)
        self.fields = len(self.low)
        self.obs = np.zeros((n, self.fields), np.float32)  # each row's last observation
        self.row_bytes = 1 + r * (8 + 8 * _FLOATS + 4 * self.fields + 10)
        self.held = self._new_held()
        self.has_info = {key: f"info:{key}" in self.v for key in MultiLane.batch_info}
        for u in range(e):
            self.adopt(u)

    def _rows(self, us: np.ndarray) -> np.ndarray:
        r = self.robots
        return (us[:, None] * r + np.arange(r)).ravel()

    def _robot(self, row: int) -> tuple[Any, int]:
        return self.worlds[row // self.robots], row % self.robots

    # -- the worlds' state into the arrays, and back ------------------------------------
    def adopt(self, u: int) -> None:
        """Take world ``u``'s state (just reset) into the arrays."""
        world, r = self.worlds[u], self.robots
        rows = slice(u * r, u * r + r)
        for i in range(r):
            self.model.set_row(u * r + i, world.world.model, i)
        self.steps[u] = world.steps
        self.active[rows] = world.active
        self.touch[u] = False
        for kind, a, b in world._touching:
            if kind == "r":
                self.touch[u, a, b] = True
        if world._obs is not None:
            self.obs[rows] = world._obs
        router, noise = world._router, world._noise
        for i in range(r):
            row = u * r + i
            st = router.states[i] if router is not None else None
            self.route[row] = 0
            if st is not None:
                self._write_route(row, st)
            self.noisy[row] = noise is not None
            self.block[row] = -1
            self.knots[row] = 0
            if noise is not None:
                tof = noise.model_of(i).tof
                self.no_target[row] = tof.no_target_m
                self.tof_model[row] = (tof.sigma_m, tof.sigma_per_m, tof.max_range_m)
                noise._bias(i, 0.0)  # its turn-on bias drawn
                self.turn_on[row] = noise._turn_on[i]
            else:
                self.no_target[row] = NO_TARGET_M

    def sync(self, u: int) -> None:
        """Put the arrays' state of world ``u`` back into the world (before its own code
        reads it: a step that raises its error)."""
        world, r = self.worlds[u], self.robots
        rows = slice(u * r, u * r + r)
        world.world.model._s[:] = self.model._s[rows]
        world.world.step_count = world.steps = int(self.steps[u])
        world.active[:] = self.active[rows]
        world._obs = self.obs[rows].copy()
        world._touching = {("r", int(a), int(b)) for a, b in zip(*np.nonzero(self.touch[u]),
                                                                  strict=True)}

    def _new_block(self, row: int, noise: Any, robot: int, block: int) -> None:
        # the range's normals of the block too (drawn where a robot is in range)
        self.tof_blocks[row] = bulk_normals(noise.seed, robot, "tof", block, SAMPLE_BLOCK)

    # -- a step -------------------------------------------------------------------------
    def step_arrays(self, idx: np.ndarray, given: np.ndarray) -> None:
        """Step the worlds ``idx`` (not resetting) under their rows' actions ``given``."""
        v, lo, r = self.v, self.lo, self.robots
        e = len(idx)
        whole = e == len(self.worlds)
        rows = self._rows(idx)
        was = self.active[rows]
        a = np.minimum(np.maximum(given.astype(np.float64), -1.0), 1.0)
        a[~was] = 0.0  # a stopped robot's motors rest
        s = self._step_model(rows, a, whole)
        pk.resolve(s, r, _DISCS, _R, self.width, self.height, True, PUSH_ITERATIONS)
        if not whole:
            self.model._s[rows] = s
        steps = self.steps[idx] + 1
        self.steps[idx] = steps
        now = np.zeros((e, r, r), np.bool_)
        pk.touching(s, r, _DISCS, _R, CONTACT_DISTANCE_M, now)
        begun = now & ~self.touch[idx]
        self.touch[idx] = now
        collided = (begun.any(axis=2) | begun.any(axis=1)).ravel()
        nr = len(rows)
        records = np.zeros((nr, _FLOATS))
        kernels.fill_states(s, WHEEL_RADIUS_M, True, WHEEL_RADIUS_M, WHEEL_DISTANCE_M, records)
        ranges = np.empty(nr)
        tof = self.tof
        pk.tof_ranges(s, records, r, was, _DISCS, _R, tof.mount_m[0], tof.mount_m[1],
                      tof.max_range_m, ranges)
        live = np.flatnonzero(was)
        lrows = rows[live]
        n = len(live)
        lrec = records[live]
        x, y, yaw = np.empty(n), np.empty(n), np.empty(n)
        lk.record_poses(lrec, x, y, yaw)
        lanes = np.empty((n, 4))
        route = self.route[lrows]
        if self.routed:
            need = np.empty((n, 4), np.int64)
            if lk.route_update(*self.map.args(), x, y, yaw, route, need):  # type: ignore[call-arg]
                self._decide(lrows, route, need)
            self.route[lrows] = route
            lk.route_lanes(*self.map.args(), x, y, yaw, route, lanes)  # type: ignore[call-arg]
        else:
            lk.road_lanes(*self.map.args(), x, y, yaw, lanes)  # type: ignore[call-arg]
        lsteps = np.repeat(steps, r)[live]
        white = self._white(lrows, lsteps)
        tof_z = self.tof_blocks[lrows, lsteps % SAMPLE_BLOCK]
        obs = np.empty((n, self.fields), np.float32)
        rw, te, tr = np.empty(n), np.empty(n, np.bool_), np.empty(n, np.bool_)
        off, on, prog = np.empty(n), np.empty(n, np.bool_), np.empty(n)
        first = self.worlds[0]
        measure_multi(lrec, lanes, route, self.routed, lsteps, self.dt, ranges[live],
                      float(tof.max_range_m), self.noisy[lrows], white, self.turn_on[lrows],
                      self.walk[lrows], tof_z, self.tof_model[lrows], self.no_target[lrows],
                      self.low, self.high, float(first.offset_penalty),
                      float(first.collision_penalty), bool(first.end_on_collision),
                      collided[live], self.max_steps, obs, rw, te, tr, off, on, prog)
        rewards, terminated, truncated = np.zeros(nr), np.zeros(nr, np.bool_), \
            np.zeros(nr, np.bool_)
        rewards[live], terminated[live], truncated[live] = rw, te, tr
        self.obs[lrows] = obs
        ended = terminated | truncated
        self.active[rows] = was & ~ended
        at: Any = slice(lo, lo + nr) if whole else lo + rows
        v["obs:"][at] = self.obs[rows]
        v["rewards"][at] = rewards
        v["terminated"][at] = terminated
        v["truncated"][at] = truncated
        # the infos (MultiLane.batch_row_infos): a stopped row has no progress
        offsets, on_road, progress = np.full(nr, np.nan), np.zeros(nr, np.bool_), np.zeros(nr)
        offsets[live], on_road[live], progress[live] = off, on, prog
        for key, values, mask in (("lane_offset_m", offsets, True),
                                  ("on_road", on_road, True),
                                  ("progress_m", progress, was),
                                  ("active", was, True),
                                  ("collided", collided & was, True)):
            if self.has_info[key]:
                v[f"info:{key}"][at] = values
                v[f"info:_{key}"][at] = mask
        if self.rand_names:
            v["rand:_reset"][at] = False
        done = ~self.active[rows].reshape(e, r).any(axis=1)
        for u, d, k in zip(idx.tolist(), done.tolist(), steps.tolist(), strict=True):
            world = self.worlds[u]
            world.active[:] = self.active[u * r:u * r + r]
            world.steps = world.world.step_count = k
            if d and self.mode == NEXT_STEP:
                self.pending_reset[u] = True
        self._digest_worlds(idx, given, records, rewards, terminated, truncated)

    def _digest_worlds(self, idx: np.ndarray, given: np.ndarray, records: np.ndarray,
                       rewards: np.ndarray, terminated: np.ndarray,
                       truncated: np.ndarray) -> None:
        """Hold each world's step's digest bytes (those :meth:`Shard.hash
        <dmxshm.batch.shard.Shard.hash>` feeds it: its rows' actions, its robots' state
        records, its rows' observations, rewards and flags), as
        :meth:`ArrayShard._digest <dmxshm.batch.array_shard.ArrayShard._digest>`."""
        e = len(idx)

        def raw(part: np.ndarray) -> np.ndarray:  # a world's rows' bytes in a row
            return np.ascontiguousarray(part).view(np.uint8).reshape(e, -1)

        self.held.add(idx, ord("s"), (
            raw(np.asarray(given, np.float32)), raw(records), raw(self.obs[self._rows(idx)]),
            raw(rewards.astype("<f8", copy=False)), raw(terminated), raw(truncated)))
