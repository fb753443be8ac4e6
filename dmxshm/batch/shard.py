"""The shard of a batch: the worlds of one worker (or of the in-process batch), stepped
at each command of the parent, their rows written into the batch's shared arrays.

One shard for every batch. Its worlds hold R robots each, one row per robot: world
``u`` of a shard whose rows start at ``lo`` holds the rows ``lo + u*R`` to
``lo + u*R + R - 1``. R = 1 is the single-robot batch (each world a gymnasium env of
one robot, :class:`OneRobot`); R > 1 the multi-robot batch
(``make_vec(..., robots_per_world=R)``, :class:`~dmxshm.batch.lanes.MultiLane`).

What the shard asks of a world (:class:`World`): ``reset(seed=)`` and
``step(actions)`` give one observation row, reward, flag and info per robot; ``done``
says every robot's episode ended (a robot that ended while the others go on is a
*stopped* row: the world decides what its row holds); ``batch_info`` declares the info
keys the batch gives as arrays; ``world`` is its simulated world, whose state goes
into the digest. An optional hook, ``batch_row_infos(infos, step_infos)``, says what
info each row shows where the world's own rule is not the plain one (each key where
the row's info has it): :meth:`MultiLane.batch_row_infos
<dmxshm.batch.lanes.MultiLane.batch_row_infos>`.

Autoreset, written once, per world, in the batch's mode (gymnasium's): ``NEXT_STEP``
resets a world whose robots all ended at its next step (every row's action ignored;
rewards 0, flags False); ``SAME_STEP`` resets it in the step that ended it, each row
whose episode ended in the step having its last observation and info in the
``final:`` arrays; ``DISABLED`` never resets on its own (the parent refuses to step
it). A reset by command is seeded by the world's first row's seed.
"""

from __future__ import annotations

import hashlib
import struct
import time
from typing import Any, Protocol

import numpy as np

from dmxshm.batch.completions import Announcer
from dmxshm.batch.env import DuckieLaneEnv, draw_cameras
from dmxshm.shm.fence import full_fence

STEP, RESET, CLOSE, RENDER, PENDING, FLUSH = 1, 2, 3, 4, 5, 6
NEXT_STEP, SAME_STEP, DISABLED = "NextStep", "SameStep", "Disabled"
"""Gymnasium's autoreset modes (the values of ``gymnasium.vector.AutoresetMode``)."""


class World(Protocol):
    """What a shard steps: R robots, one row each (see the module docstring)."""

    robots: int
    done: bool
    world: Any
    batch_info: dict[str, Any]

    def reset(self, seed: int | None = None) -> tuple[Any, list[dict[str, Any]]]: ...

    def step(self, actions: list[list[float]]) -> tuple[Any, Any, Any, Any,
                                                        list[dict[str, Any]]]: ...

    def close(self) -> None: ...


def info_fields(world: Any) -> dict[str, np.dtype]:
    """The info keys the batch gives as arrays, with their dtypes: what the world (an
    env, a multi-robot world) declares in its ``batch_info``; the batch knows none of
    its own. Each key ``k`` has its array ``info:k`` and its mask ``info:_k``
    (gymnasium's ``_k``: True where the row's info has the key). None declared: none."""
    return {key: np.dtype(dtype) for key, dtype in getattr(world, "batch_info", {}).items()}


def rand_names(world: Any) -> list[str]:
    """The randomised parameters a world reports at reset (domain randomisation,
    :mod:`dmxshm.world.randomize`), in the batch's column order; none without it."""
    if getattr(world, "randomization", None) is None:
        return []
    from dmxshm.world.randomize import NOMINAL

    return list(NOMINAL)


class OneRobot:
    """A gymnasium env of one robot as a world of one row.

    Its observation becomes a batch of one row (a view: an image the batch renderer
    draws later lands in the row), its reward, flags and info lists of one. A
    DuckieLane env (and the drop-ins) steps by :meth:`~DuckieLaneEnv.step_wheels`, two
    floats; another env by ``step`` with a float32 action. ``batch_info``: the env
    class's declaration (none: no info arrays); ``camera_jobs``: the shard's list
    where its camera is drawn with the others' (the batch renderer).
    """

    robots = 1
    __slots__ = ("env", "done", "world", "batch_info", "randomization", "_step")

    def __init__(self, env: Any, camera_jobs: list[Any] | None = None) -> None:
        self.env = env
        self.done = False
        self.batch_info: dict[str, Any] = getattr(env, "batch_info", {})
        self.randomization = getattr(env, "randomization", None)
        self.world = env.world if isinstance(env, DuckieLaneEnv) else None
        self._step = env.step_wheels if isinstance(env, DuckieLaneEnv) else self._step_array
        if (camera_jobs is not None and isinstance(env, DuckieLaneEnv)
                and env.renderer == "batch" and env.camera is not None):
            env.camera_jobs = camera_jobs

    def _step_array(self, left: float, right: float) -> tuple[Any, Any, bool, bool, Any]:
        return self.env.step(np.array([left, right], np.float32))

    def reset(self, seed: int | None = None) -> tuple[Any, list[dict[str, Any]]]:
        obs, info = self.env.reset(seed=seed)
        self.done = False
        return _one_row(obs), [info]

    def step(self, actions: list[list[float]]) -> tuple[Any, tuple[float], tuple[bool],
                                                        tuple[bool], tuple[dict[str, Any]]]:
        obs, reward, terminated, truncated, info = self._step(*actions[0])
        self.done = terminated or truncated
        row = obs[None] if type(obs) is np.ndarray else _one_row(obs)
        return row, (reward,), (terminated,), (truncated,), (info,)

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def _one_row(obs: Any) -> Any:
    """One observation as a batch of one row (views)."""
    if isinstance(obs, dict):
        return {k: np.asarray(x)[None] for k, x in obs.items()}
    return np.asarray(obs)[None]


class Shard:
    """The worlds of rows ``lo`` to ``hi - 1``, and how they step (module docstring).

    Two paths write the same shared arrays with the same numbers:

    * **synchronous** (:meth:`run`): a whole-shard command (``STEP``,
      ``RESET``, ``RENDER``) from :meth:`DmxVectorEnv.step` and ``reset``;
    * **asynchronous** (:meth:`run_pending`): the rows whose ``cmd`` the parent
      set (:meth:`DmxVectorEnv.send`, whole worlds), each announced when done in
      this worker's completion ring (see :class:`~dmxshm.batch.worker.Arrays`).

    Both go through :meth:`step_envs`, which writes each array with one assignment.
    """

    def __init__(self, index: int, lo: int, hi: int, v: dict[str, np.ndarray],
                 worlds: list[Any], render: tuple[int, ...] | None, ready: Any,
                 mode: str = NEXT_STEP, done: Any = None,
                 camera_jobs: list[Any] | None = None) -> None:
        self.index, self.lo, self.hi = index, lo, hi
        self.done = done
        self.last_sequence = 0
        self.v, self.worlds, self.render_shape = v, worlds, render
        self.robots = worlds[0].robots if worlds else 1
        self.mode = mode
        self.pending_reset = [False] * len(worlds)
        self.keys = [k for k in v if k.startswith("obs:")]
        self.announcer = Announcer(index, lo, hi, v, ready)
        self.hashes = [hashlib.sha256() for _ in worlds]
        self.rand_names = rand_names(worlds[0]) if worlds else []
        self.info = info_fields(worlds[0]) if worlds else {}
        self.blank = {key: dtype.type(0).item() for key, dtype in self.info.items()}
        self.row_infos = getattr(type(worlds[0]), "batch_row_infos", None) if worlds else None
        # Every camera of the step drawn in one call (the batch renderer): the worlds
        # of one robot add theirs here (a multi-robot world draws its own at once).
        self.camera_jobs = camera_jobs if camera_jobs is not None else []
        r = self.robots
        self.packing = struct.Struct(f"<{r}d{r}?{r}?")  # a world's rewards and flags
        self.zeros, self.falses = [0.0] * r, [False] * r  # a reset's
        self.still = self.packing.pack(*self.zeros, *self.falses, *self.falses)

    def put(self, i: int | slice, obs: Any, prefix: str = "") -> None:
        """Write ``obs`` into the rows ``i`` of the observation arrays (or of the
        ``prefix``-ed ones)."""
        for key in self.keys:
            self.v[prefix + key][i] = obs[key[4:]] if key != "obs:" else obs

    def serve(self, t_start: float) -> bool:
        """Carry out the parent's command for this shard (the word at ``command[index]``,
        taken at ``t_start``); False for ``CLOSE``.

        The body of a worker's loop (:func:`~dmxshm.batch.worker.run_worker`), and all
        of the in-process batch's (:mod:`dmxshm.batch.serial`), which calls it where it
        would post ``go``. The command is one word, ``sequence << 8 | command``: a
        whole-shard command runs once per sequence number (a wake-up left over from
        asynchronous sends never runs it twice); ``PENDING`` steps the rows the parent
        sent.
        """
        v, index = self.v, self.index
        word = int(v["command"][index])
        command, sequence = word & 0xFF, word >> 8
        if command == CLOSE:
            return False
        if command == PENDING:
            self.run_pending()
            return True
        if sequence == self.last_sequence:
            return True  # a wake-up left from asynchronous sends
        self.last_sequence = sequence
        self.run(command)
        v["t_start"][index] = t_start  # when the command was taken, when the shard was done
        v["t_done"][index] = time.perf_counter()
        # The parent sleeps until every shard is done; the worker that sees
        # it posts. Store, full fence, load (each worker): at least one of
        # the last two sees the other's store, so the post is never missed
        # (both may post: the parent then finds a token to spare).
        finished = v["finished"]
        finished[index] = sequence
        full_fence()
        if (finished == sequence).all():
            self.done.release()
        return True

    def close(self) -> None:
        """Close every world of the shard."""
        for world in self.worlds:
            world.close()

    def run(self, command: int) -> None:
        """One synchronous command for the whole shard (``RENDER``: worlds of one robot
        only; the parent refuses it for the others)."""
        if command == FLUSH:
            self.flush_digests()
            return
        if command == RENDER:
            v, lo = self.v, self.lo
            for j, world in enumerate(self.worlds):
                if self.render_shape is not None and lo + j < self.render_shape[0]:
                    v["render"][lo + j] = world.render()
            return
        us = list(range(len(self.worlds)))
        self.step_worlds(us, [command] * len(us))

    def step_worlds(self, us: list[int], commands: list[int]) -> None:
        """Reset or step the worlds ``us`` of the shard (``RESET`` or ``STEP``, or a
        reset anyway where the world ended: ``NEXT_STEP`` autoreset), then write their
        rows with one assignment per array.

        Both paths go through here, so a world gives the same numbers whichever
        path steps it.
        """
        v, lo, r, worlds = self.v, self.lo, self.robots, self.worlds
        pending_reset = self.pending_reset
        whole = len(us) == len(worlds)  # every world of the shard, in order (synchronous)
        rows: Any = slice(lo, self.hi) if whole else [lo + u * r + i for u in us
                                                      for i in range(r)]
        given = v["actions"][rows]
        actions = given.tolist()
        moved = given.tobytes()  # each world's slice of it goes into its digest
        width = 8 * r  # bytes of a world's actions
        rewards: list[Any] = []
        ended: list[Any] = []
        cut: list[Any] = []
        infos_shown: list[dict[str, Any]] = []  # each row's, in row order
        resets: list[bool] = []
        finals: list[bool] = []
        # what each world's digest takes: its actions (None: it reset), rewards and flags
        stepped: list[bytes | None] = [None] * len(us)
        returns: list[bytes] = [self.still] * len(us)
        observed: list[Any] = [None] * len(us)
        last: list[tuple[Any, list[dict[str, Any]], list[bool]] | None] = [None] * len(us)
        next_step, same_step = self.mode == NEXT_STEP, self.mode == SAME_STEP
        row_infos, rand_names, packing = self.row_infos, self.rand_names, self.packing
        for m, u in enumerate(us):
            world = worlds[u]
            step_infos: list[dict[str, Any]] | None = None
            reset = commands[m] == RESET or pending_reset[u]
            if reset:
                seed = int(v["seeds"][lo + u * r]) if commands[m] == RESET else -1
                obs, infos = world.reset(seed=None if seed < 0 else seed)
                pending_reset[u] = False
                rewards += self.zeros
                ended += self.falses
                cut += self.falses
                if same_step:
                    finals += self.falses
            else:
                obs, reward, terminated, truncated, infos = world.step(
                    actions[m * r:(m + 1) * r])
                stepped[m] = moved[m * width:(m + 1) * width]
                returns[m] = packing.pack(*reward, *terminated, *truncated)
                step_infos = infos
                rewards.extend(reward)
                ended.extend(terminated)
                cut.extend(truncated)
                if next_step:
                    pending_reset[u] = world.done
                elif same_step:
                    final = [a or b for a, b in zip(terminated, truncated, strict=True)]
                    finals += final
                    if any(final):
                        # as SyncVectorEnv: the rows whose episode ended have its last
                        # observation and info in final_obs and final_info; a world
                        # whose robots all ended resets in the step, and the reset's
                        # observation and info are the step's
                        last[m] = (obs, infos, final)
                        if world.done:
                            obs, infos = world.reset()
                            reset = True
            if rand_names:
                resets += [reset] * r
                if reset:
                    v["rand"][lo + u * r:lo + u * r + r] = [
                        [info["randomization"][p] for p in rand_names] for info in infos]
            infos_shown += infos if row_infos is None else row_infos(world, infos, step_infos)
            observed[m] = obs
        if self.camera_jobs:  # every camera of this step, drawn in one call
            draw_cameras(self.camera_jobs)
        for m, u in enumerate(us):
            at = slice(lo + u * r, lo + u * r + r)
            ended_last = last[m]
            if ended_last is not None:
                self.put_final(at, ended_last[0], ended_last[1])
            self.put(at, observed[m])
            self.hash(u, at, stepped[m], returns[m],
                      ended_last[2] if ended_last is not None else None)
        if same_step:
            v["final"][rows] = finals
        v["rewards"][rows] = rewards
        v["terminated"][rows] = ended
        v["truncated"][rows] = cut
        for key, blank in self.blank.items():  # declared keys: the value where a row has it
            v[f"info:{key}"][rows] = [info.get(key, blank) for info in infos_shown]
            v[f"info:_{key}"][rows] = [key in info for info in infos_shown]
        if rand_names:
            v["rand:_reset"][rows] = resets

    def hash(self, u: int, rows: slice, actions: bytes | None, returns: bytes,
             final: list[bool] | None) -> None:
        """Add what world ``u`` (``rows``) just did to its digest, and publish the digest
        in each of its rows: the actions it stepped with (none for a reset), its
        world's state in full, the last observation of each row whose episode ended in
        the step, every row's observation, the rewards and flags (``returns``). Per
        world, so the batch's digest is the same with any number of workers
        (:attr:`~dmxshm.batch.vector.DmxVectorEnv.trajectory_digest`)."""
        h, v = self.hashes[u], self.v
        h.update(b"r" if actions is None else b"s" + actions)
        world = self.worlds[u].world
        if world is not None:
            h.update(world.state(copy=False).tobytes())
        if final is not None:
            for key in self.keys:
                h.update(v["final:" + key][rows][final].tobytes())
        for key in self.keys:
            h.update(v[key][rows].tobytes())
        h.update(returns)
        v["digests"][rows] = np.frombuffer(h.digest(), np.uint8)

    def flush_digests(self) -> None:
        """Hash what the shard holds unhashed into its envs' digests (``FLUSH``, before
        the parent reads them): nothing here, where each step is hashed as it is made
        (:class:`~dmxshm.batch.array_shard.ArrayShard` holds rows)."""

    def put_final(self, rows: slice, obs: Any, infos: list[dict[str, Any]]) -> None:
        """The last observation and info of a world's rows (``SAME_STEP``; the parent
        reads the rows whose episode ended)."""
        self.put(rows, obs, "final:")
        for key, blank in self.blank.items():
            self.v[f"final:info:{key}"][rows] = [info.get(key, blank) for info in infos]
            self.v[f"final:info:_{key}"][rows] = [key in info for info in infos]

    def run_pending(self) -> None:
        """Step the rows of the shard that the parent sent, then announce them
        (:mod:`dmxshm.batch.completions`)."""
        v, lo = self.v, self.lo
        cmd = v["cmd"]
        # a copy: the parent may set other rows' cmd while this reads them
        mine = cmd[lo:self.hi].copy()
        js = np.flatnonzero(mine).tolist()
        if not js:
            return
        commands = mine[js].tolist()
        envs = [lo + j for j in js]
        cmd[envs] = 0  # none of them can be sent again before it is announced
        r = self.robots
        of_world: dict[int, int] = {}  # whole worlds: a world's rows share one command
        for j, command in zip(js, commands, strict=True):
            of_world.setdefault(j // r, command)
        self.step_worlds(list(of_world), list(of_world.values()))
        self.announcer.announce(envs)
