"""A shard that steps its DuckieLane envs as arrays: one compiled call per stage for
every env of the shard (the DB18 step, the map's edges, the state records, the routes,
the lane pose, the sensors with their noise, the reward and flags), not a Python call
per env. A camera's image is each env's own camera code at the arrays' state (its
appearance and noise), every image of the step drawn in one call of the batch renderer.

The envs stay what they are (:class:`~dmxshm.batch.shard.OneRobot` worlds): a reset
and a close go through each env's own code, and the shard then takes the
env's state into its arrays (:meth:`ArrayShard.adopt`). A step of the envs that did
not reset is the arrays'. The rows are the env's own bit for bit (observation, reward,
flags, info, and so the trajectory digest; ``tests/batch/test_array_shard.py`` steps
both ways and compares), which the kernels get by writing the env's expressions in
their order (:mod:`dmxshm.sim.lane_kernels`, :mod:`dmxshm.sim.lane_measure`).

Which shards step this way (:func:`eligible`): DuckieLane-v0 and v1 (not the
drop-ins) under ``physics="db18"``, without a ``render_mode``, on a map without
objects, in the ``NextStep`` or ``Disabled`` autoreset mode. Any other batch
steps env by env (:class:`~dmxshm.batch.shard.Shard`), with the same rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dmxshm.batch.env import DuckieLaneEnv, draw_cameras
from dmxshm.batch.env_v1 import DuckieLaneV1Env
from dmxshm.batch.held import Held
from dmxshm.batch.shard import DISABLED, NEXT_STEP, RESET, Shard
from dmxshm.matrix.noise import SAMPLE_BLOCK, bulk_normals
from dmxshm.sim import db18_kernels as kernels
from dmxshm.sim import footprints as fp
from dmxshm.sim import lane_kernels as lk
from dmxshm.sim.db18 import DB18, WHEEL_DISTANCE_M, WHEEL_RADIUS_M
from dmxshm.sim.lane_measure import measure
from dmxshm.sim.obs import NO_TARGET_M
from dmxshm.world.routes import TURN_CODE
from dmxshm.world.state import ROBOT_STATE_DTYPE

HELD_STEPS = 16
"""Steps of an env whose digest bytes the shard holds before it hashes them in one
update (the digest's cost per step: one SHA-256 update and one digest per env would
be about a sixth of a step); a reset, the block full, or the parent reading the
digest (``FLUSH``) hashes them, and the published digest is computed only when it is
read. 16 measured cheapest of 8, 16, 32, 64 and 256 for 256 envs (docs/benchmarks.md,
"the digest's share of a DB18 step"): more steps held outgrow the cache."""
HELD_BYTES = 65536
"""At most this many bytes held per env (fewer steps where a step's bytes are many: a
camera's image)."""

ENABLED = True
"""Whether eligible shards step as arrays (False: every shard env by env; the tests
compare the two)."""

_FLOATS = ROBOT_STATE_DTYPE.itemsize // 8
_DISCS = np.array(fp.ROBOT_DISCS, float)


def eligible(worlds: list[Any], mode: str) -> bool:
    """Whether a shard of ``worlds`` steps as arrays (the module docstring)."""
    if not (ENABLED and lk.HYPOT_IS_PYTHONS and worlds and mode in (NEXT_STEP, DISABLED)):
        return False
    first: Any = getattr(worlds[0], "env", None)
    if type(first) not in (DuckieLaneEnv, DuckieLaneV1Env):
        return False
    for world in worlds:
        env: Any = getattr(world, "env", None)
        if (type(env) is not type(first) or env.physics != "db18"
                or env.obs_kind != first.obs_kind or env.render_mode is not None
                or (env.camera is not None and (env.camera_jobs is None
                                                or env.renderer != "batch"))
                or env.world.road_map.objects or not env.world.walls
                or env.world.road_map.digest() != first.world.road_map.digest()
                or env.world.dt_s != first.world.dt_s
                or env.world.substeps != first.world.substeps
                or env.max_episode_steps != first.max_episode_steps
                or env.offset_penalty != first.offset_penalty
                or getattr(env, "route_turns", None) != getattr(first, "route_turns", None)):
            return False
    return True


class ArrayShard(Shard):
    """A :class:`~dmxshm.batch.shard.Shard` whose steps are array calls (the module
    docstring); its resets and renders are its envs'."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        envs = self.envs = [world.env for world in self.worlds]
        e = len(envs)
        first = envs[0]
        self.v1 = isinstance(first, DuckieLaneV1Env)
        self.routed = self.v1 and first.route_turns is not None
        self.map = lk.MapArrays(first.world.road_map)
        self.dt, self.substeps = first.world.dt_s, first.world.substeps
        self.width, self.height = first.world.road_map.size_m
        self.tof_m = float(first.tof.max_range_m)
        self.low, self.high = first._state_low, first._state_high
        self.max_steps = int(first.max_episode_steps or 0)
        self.model = DB18([env.world.model.params[0] for env in envs])
        self.steps = np.zeros(e, np.int64)
        self.route = np.zeros((e, len(lk.ROUTE_FIELDS)), np.int64)
        self.noisy = np.zeros(e, np.bool_)
        self.no_target = np.full(e, NO_TARGET_M)
        self.block = np.full(e, -1, np.int64)
        self.blocks = np.zeros((e, SAMPLE_BLOCK, 6))
        self.turn_on = np.zeros((e, 6))
        self.walk = np.zeros((e, 2, 6))
        self.knots = np.zeros(e, np.int64)  # walk knots held per env
        self.fields = len(self.low)
        kind = first.obs_kind
        self.state_key = {"state": "obs:", "both": "obs:state"}.get(kind)
        self.camera_key = {"camera": "obs:", "both": "obs:camera"}.get(kind)
        obs_bytes = sum(self.v[key][self.lo].nbytes for key in self.keys)
        self.row_bytes = 1 + 8 + 8 * _FLOATS + obs_bytes + 10
        self.held = self._new_held()
        for u in range(e):  # the envs as made (a batch resets before its first step)
            self.adopt(u)

    def _new_held(self) -> Held:
        """The ring of the steps not yet hashed (its ``moved``: hashed since the digest
        was published): :data:`HELD_STEPS` of ``row_bytes`` each, fewer where a step's
        bytes are many (:data:`HELD_BYTES`)."""
        steps = max(1, min(HELD_STEPS, HELD_BYTES // self.row_bytes))
        return Held([h.update for h in self.hashes], steps, self.row_bytes)

    # -- the envs' state into the arrays, and back -------------------------------------
    def adopt(self, u: int) -> None:
        """Take env ``u``'s state (just reset) into the arrays."""
        env = self.envs[u]
        world = env.world
        m = self.model
        m.set_row(u, world.model)  # (its parameters: a randomised env's own)
        self.steps[u] = env._steps
        router = getattr(env, "_router", None)
        st = router.states[0] if router is not None else None
        self.route[u] = 0
        if st is not None:
            self._write_route(u, st)
        noise = getattr(env, "_noise", None)
        self.noisy[u] = noise is not None
        self.block[u] = -1
        self.knots[u] = 0
        if noise is not None:
            self.no_target[u] = noise.model_of(0).tof.no_target_m
            noise._bias(0, 0.0)  # its turn-on bias drawn
            self.turn_on[u] = noise._turn_on[0]
        else:
            self.no_target[u] = NO_TARGET_M

    def _write_route(self, u: int, st: Any) -> None:
        self.route[u] = (1, st.cell[0], st.cell[1], lk.EDGES.index(st.entry),
                         lk.EDGES.index(st.exit), int(TURN_CODE[st.turn]), int(st.inside))

    def sync(self, u: int) -> None:
        """Put the arrays' state of env ``u`` back into the env (before its own code
        reads it: a step that raises its error). Nothing renders here: a batch with a
        camera or a render mode is not stepped as arrays."""
        env = self.envs[u]
        env.world.model._s[0] = self.model._s[u]
        env.world.step_count = env._steps = int(self.steps[u])

    # -- the shard's commands ------------------------------------------------------------
    def step_worlds(self, us: list[int], commands: list[int]) -> None:
        pending = self.pending_reset
        resets = [(u, c) for u, c in zip(us, commands, strict=True)
                  if c == RESET or pending[u]]
        if len(resets) < len(us):
            stepping = np.array([u for u, c in zip(us, commands, strict=True)
                                 if not (c == RESET or pending[u])], np.int64)
            given = self.v["actions"][self.lo + self._rows(stepping)]
            if not np.isfinite(given).all():  # the env's own error, from its own code
                for u in stepping.tolist():
                    self.sync(u)
                super().step_worlds(us, commands)
                return
            self.step_arrays(stepping, given)
        if resets:
            us_reset = [u for u, _ in resets]
            self._hash_held(np.array(us_reset, np.int64))  # (their steps before the reset)
            super().step_worlds(us_reset, [c for _, c in resets])
            self.held.moved[us_reset] = False  # (the reset's hash published them)
            for u in us_reset:
                self.adopt(u)
        # (nonzero while a digest is not yet published: the parent then asks for them)
        self.v["held"][self.index] = self.held.count() + int(self.held.moved.sum())

    def step_arrays(self, idx: np.ndarray, given: np.ndarray) -> None:
        """Step the envs ``idx`` (not resetting) under their actions ``given``."""
        v, lo = self.v, self.lo
        whole = len(idx) == len(self.worlds)
        a = np.minimum(np.maximum(given.astype(np.float64), -1.0), 1.0)
        if not self.v1:  # v0: wheel speeds of 25 rad/s at 1, as duties (/27)
            a = (a * 25.0) / 27.0
        s = self._step_model(idx, a, whole)
        kernels.keep_inside(s, _DISCS, fp.ROBOT_DISC_RADIUS_M, self.width, self.height)
        if not whole:
            self.model._s[idx] = s
        steps = self.steps[idx] + 1
        self.steps[idx] = steps
        n = len(idx)
        records = np.zeros((n, _FLOATS))
        kernels.fill_states(s, WHEEL_RADIUS_M, True, WHEEL_RADIUS_M, WHEEL_DISTANCE_M, records)
        x, y, yaw = np.empty(n), np.empty(n), np.empty(n)
        lk.record_poses(records, x, y, yaw)
        lanes = np.empty((n, 4))
        route = self.route[idx]
        if self.routed:
            need = np.empty((n, 4), np.int64)
            if lk.route_update(*self.map.args(), x, y, yaw, route, need):  # type: ignore[call-arg]
                self._decide(idx, route, need)
            self.route[idx] = route
            lk.route_lanes(*self.map.args(), x, y, yaw, route, lanes)  # type: ignore[call-arg]
        else:
            lk.road_lanes(*self.map.args(), x, y, yaw, lanes)  # type: ignore[call-arg]
        white = self._white(idx, steps)
        obs = np.empty((n, self.fields), np.float32)
        rewards, terminated, truncated = np.empty(n), np.empty(n, np.bool_), np.empty(n, np.bool_)
        offsets, on_road, progress = np.empty(n), np.empty(n, np.bool_), np.empty(n)
        first = self.envs[0]
        measure(records, lanes, route, self.routed, self.v1, steps, self.dt, self.tof_m,
                self.noisy[idx], white, self.turn_on[idx], self.walk[idx],
                self.no_target[idx], self.low, self.high, float(first.offset_penalty),
                self.max_steps, obs, rewards, terminated, truncated, offsets, on_road,
                progress)
        rows: Any = slice(lo, lo + n) if whole else lo + idx
        if self.state_key is not None:
            v[self.state_key][rows] = obs
        if self.camera_key is not None:
            v[self.camera_key][rows] = self._images(idx, steps, records)
        v["rewards"][rows] = rewards
        v["terminated"][rows] = terminated
        v["truncated"][rows] = truncated
        for key, values in (("lane_offset_m", offsets), ("on_road", on_road),
                            ("progress_m", progress)):
            if f"info:{key}" in v:
                v[f"info:{key}"][rows] = values
                v[f"info:_{key}"][rows] = True
        if self.rand_names:
            v["rand:_reset"][rows] = False
        done = terminated | truncated
        if self.mode == NEXT_STEP:
            for u in idx[done].tolist():
                self.pending_reset[u] = True
        for u, d in zip(idx.tolist(), done.tolist(), strict=True):
            self.worlds[u].done = d
        self._digest(idx, given, records, rows, rewards, terminated, truncated)

    def _step_model(self, rows: np.ndarray, duties: np.ndarray, whole: bool) -> np.ndarray:
        """The DB18 step of the model's ``rows`` (all of them where ``whole``) under
        ``duties``, substeps included; their state (the model's own array where
        ``whole``, else a copy the caller writes back after its own changes)."""
        m = self.model
        h = self.dt / self.substeps
        if len(m._delayed):  # commands delayed (drawn): the model keeps their past
            for _ in range(self.substeps):
                if whole:
                    m.step(h, duties)
                else:
                    m.step_rows(rows, h, duties)
            return m._s if whole else m._s[rows]
        s = m._s if whole else m._s[rows]
        p = m._p if whole else m._p[rows]
        left, right = np.ascontiguousarray(duties[:, 0]), np.ascontiguousarray(duties[:, 1])
        for _ in range(self.substeps):
            kernels.step(h, left, right, p, s, WHEEL_RADIUS_M, WHEEL_DISTANCE_M)
        return s

    def _rows(self, us: np.ndarray) -> np.ndarray:
        """The shard's rows of its worlds ``us`` (one each here)."""
        return us

    def _robot(self, row: int) -> tuple[Any, int]:
        """The env (or world) of the shard's row ``row``, and the robot's index in it."""
        return self.envs[row], 0

    def _images(self, idx: np.ndarray, steps: np.ndarray, records: np.ndarray) -> np.ndarray:
        """The camera images of the envs ``idx`` at their state records: each env's own
        camera code (its appearance and noise), at its state and step count, drawn
        together by the batch renderer."""
        recs = records.view(ROBOT_STATE_DTYPE)
        images = []
        for i, u in enumerate(idx.tolist()):
            env = self.envs[u]
            env.world.model._s[0] = self.model._s[u]
            env.world.step_count = env._steps = int(steps[i])
            images.append(env._camera_image(recs[i, 0]))
        draw_cameras(self.camera_jobs)
        return np.stack(images)

    def _decide(self, idx: np.ndarray, route: np.ndarray, need: np.ndarray) -> None:
        """The route decisions the kernel asked for (rows ``idx``), made by each robot's
        router."""
        for i in np.flatnonzero(need[:, 0] >= 0).tolist():
            env, robot = self._robot(int(idx[i]))
            router = env._router
            r, c, entry, inside = need[i].tolist()
            st = router._decide(robot, (r, c), lk.EDGES[entry])
            st.inside = bool(inside)
            router.states[robot] = st
            route[i] = (1, r, c, entry, lk.EDGES.index(st.exit), int(TURN_CODE[st.turn]),
                        inside)

    def _white(self, idx: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """The IMU's white noise of this step for the rows ``idx`` (n, 6), and their
        bias walk's knots held far enough (:meth:`Noise._sample
        <dmxshm.matrix.noise.Noise._sample>`'s blocks and :meth:`Noise._walk
        <dmxshm.matrix.noise.Noise._walk>`'s knots, the same numbers)."""
        noisy = self.noisy[idx]
        if not noisy.any():
            return np.zeros((len(idx), 6))
        block = steps // SAMPLE_BLOCK
        knots = (steps * self.dt).astype(np.int64) + 2  # walk[j] and walk[j + 1]
        stale = noisy & ((block != self.block[idx]) | (knots > self.knots[idx]))
        for i in np.flatnonzero(stale).tolist():
            u = int(idx[i])
            env, robot = self._robot(u)
            noise = env._noise
            if block[i] != self.block[u]:
                model = noise.model_of(robot).imu
                scale = (model.acc_white,) * 3 + (model.gyro_white,) * 3
                z = bulk_normals(noise.seed, robot, "imu", int(block[i]), SAMPLE_BLOCK * 6)
                self.blocks[u] = z.reshape(SAMPLE_BLOCK, 6) * scale
                self._new_block(u, noise, robot, int(block[i]))
                self.block[u] = block[i]
            if knots[i] > self.knots[u]:
                walk = noise._walk(robot, int(knots[i]) - 1)
                if len(walk) > self.walk.shape[1]:
                    grown = np.zeros((self.walk.shape[0], 2 * len(walk), 6))
                    grown[:, :self.walk.shape[1]] = self.walk
                    self.walk = grown
                self.walk[u, :len(walk)] = walk
                self.knots[u] = len(walk)
        return self.blocks[idx, steps % SAMPLE_BLOCK]

    def _new_block(self, row: int, noise: Any, robot: int, block: int) -> None:
        """Row ``row`` moved to its noise's sample block ``block`` (a hook: the IMU's
        block is drawn)."""

    def _digest(self, idx: np.ndarray, given: np.ndarray, records: np.ndarray,
                rows: Any, rewards: np.ndarray, terminated: np.ndarray,
                truncated: np.ndarray) -> None:
        """Hold each env's step's digest bytes (those :meth:`Shard.hash` feeds it: its
        actions, state record, observation (the shared arrays' ``rows``), reward and
        flags) in the shard's :class:`~dmxshm.batch.held.Held` ring, which hashes each
        env's steps a block at a time (:data:`HELD_STEPS`, fewer where a step's bytes
        are many)."""
        n = len(idx)

        def raw(part: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(part).view(np.uint8).reshape(n, -1)

        self.held.add(idx, ord("s"), (
            raw(np.asarray(given, np.float32)), raw(records),
            *[raw(self.v[key][rows].reshape(n, -1)) for key in self.keys],
            raw(rewards.astype("<f8", copy=False)), raw(terminated), raw(truncated)))

    def _hash_held(self, us: np.ndarray) -> None:
        """Hash the held steps of the envs ``us`` into their digests (published when the
        parent reads them: :meth:`flush_digests`)."""
        self.held.flush(us)

    def _publish(self) -> None:
        """Each env's digest whose hash moved since it was published, into its rows."""
        us = np.flatnonzero(self.held.moved)
        if not len(us):
            return
        digests = b"".join(self.hashes[u].digest() for u in us.tolist())
        self.held.moved[us] = False
        # (each world's digest in every row of it)
        self.v["digests"][self.lo:self.hi].reshape(-1, self.robots, 32)[us] = np.frombuffer(
            digests, np.uint8).reshape(len(us), 1, 32)

    def flush_digests(self) -> None:
        self.held.flush_all()
        self._publish()
        self.v["held"][self.index] = 0
