"""A batch worker: the worlds of one shard, stepped at each command of the parent.

The parent (:class:`~dmxshm.batch.vector.DmxVectorEnv`) and its workers share
one segment of arrays (:class:`Arrays`: actions, rewards, flags, info,
observations, render images), a ``go`` semaphore per worker (a command is
there), one ``done`` semaphore (every shard answered a whole-shard command:
the parent wakes once per step, whatever the number of workers), and one
``ready`` semaphore for asynchronous sends (the envs the parent waits for
are in).
Nothing is pickled on the step path.
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
import time
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import posix_ipc

from dmxshm import settings
from dmxshm.batch.completions import Announcer
from dmxshm.batch.env import draw_cameras
from dmxshm.proc.child import ignore_stop_signals, parent_gone
from dmxshm.proc.outcome import Terminated
from dmxshm.shm.fence import full_fence
from dmxshm.shm.registry import unlink_names
from dmxshm.shm.segment import Segment
from dmxshm.shm.waiting import acquire, spin_until

STEP, RESET, CLOSE, RENDER, PENDING = 1, 2, 3, 4, 5
NEXT_STEP, SAME_STEP, DISABLED = "NextStep", "SameStep", "Disabled"
"""Gymnasium's autoreset modes (the values of ``gymnasium.vector.AutoresetMode``)."""


def info_fields(env: Any) -> dict[str, np.dtype]:
    """The info keys the batch gives as arrays, with their dtypes: what the env (or
    multi-robot world) declares in its ``batch_info`` class attribute; the batch knows
    none of its own. Each key ``k`` has its array ``info:k`` and its mask ``info:_k``
    (gymnasium's ``_k``: True where the row's info has the key)."""
    return {key: np.dtype(dtype) for key, dtype in type(env).batch_info.items()}


def rand_names(env: Any) -> list[str]:
    """The randomised parameters an env reports at reset (domain randomisation,
    :mod:`dmxshm.world.randomize`), in the batch's column order; none without it."""
    if getattr(env, "randomization", None) is None:
        return []
    from dmxshm.world.randomize import NOMINAL

    return list(NOMINAL)


def poll(sem: Any, spin_s: float) -> None:
    """Poll ``sem`` (without taking it) up to ``spin_s`` before the caller sleeps on it."""
    if spin_s > 0:
        spin_until(lambda: sem.value > 0, spin_s)


def fields(space: gym.Space[Any]) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    if isinstance(space, gym.spaces.Dict):
        return {k: (s.shape, s.dtype) for k, s in space.spaces.items()}  # type: ignore[misc]
    return {"": (space.shape, space.dtype)}  # type: ignore[dict-item]


PARENT_GONE_WAIT_S = 0.2
"""How long a worker stopped by a signal watches its parent before it decides
the parent lives (a death signal may come before the parent's threads are all
gone); a live supervisor's SIGTERM costs the worker this much more."""

RENDER_ENVS = 4
"""``render()`` tiles the camera images of this many sub-environments (the first)."""


def render_shape(n: int, env_kwargs: dict[str, Any]) -> tuple[int, ...] | None:
    """Shape of the shared render images, or None without ``render_mode="rgb_array"``."""
    if env_kwargs.get("render_mode") != "rgb_array":
        return None
    width, height = env_kwargs["camera"]
    return (min(n, RENDER_ENVS), height, width, 3)


@dataclass(frozen=True)
class BatchPorts:
    """The shared-memory objects of a batch, by what they are for (names of each).

    ``arrays``: the segment every array lives in (:class:`Arrays`); ``ready``: the
    asynchronous API's wake-up of the parent; ``done``: the last worker's post
    when a whole-shard command is finished; ``go``: each worker's command post.
    """

    arrays: str
    ready: str
    done: str
    go: tuple[str, ...]

    def semaphores(self) -> list[str]:
        """Every semaphore's name."""
        return [self.ready, self.done, *self.go]


class Arrays:
    """The shared arrays of a batch, laid out in one segment."""

    def __init__(self, seg: Segment, n: int, obs: dict[str, tuple[tuple[int, ...], np.dtype]],
                 workers: int, render: tuple[int, ...] | None, final: bool = False,
                 params: int = 0, info: dict[str, np.dtype] | None = None) -> None:
        self.segment = seg
        self.views: dict[str, np.ndarray] = {}
        for name, shape, dtype, offset in self._layout(n, obs, workers, render, final,
                                                       params, info):
            self.views[name] = seg.ndarray(dtype, shape, offset)

    @staticmethod
    def _layout(n: int, obs: dict[str, tuple[tuple[int, ...], np.dtype]], workers: int,
                render: tuple[int, ...] | None, final: bool = False, params: int = 0,
                info: dict[str, np.dtype] | None = None
                ) -> list[tuple[str, tuple[int, ...], np.dtype, int]]:
        """``(name, shape, dtype, offset)`` of every array, each 64-byte aligned."""
        layout: list[tuple[str, tuple[int, ...], np.dtype]] = [
            ("actions", (n, 2), np.dtype(np.float32)), ("rewards", (n,), np.dtype(np.float64)),
            ("terminated", (n,), np.dtype(np.bool_)), ("truncated", (n,), np.dtype(np.bool_)),
            ("seeds", (n,), np.dtype(np.int64)), ("command", (workers,), np.dtype(np.int64)),
            ("t_start", (workers,), np.dtype(np.float64)),
            ("t_done", (workers,), np.dtype(np.float64)),
            # the sequence number of the last whole-shard command each worker finished
            ("finished", (workers,), np.dtype(np.int64)),
            # asynchronous sends: what each env is to do (0: nothing), when it
            # finished, the workers' completion rings (worker w's ring is
            # done_ids[its lo:its hi]) and counts, and the total count the
            # parent waits for
            ("cmd", (n,), np.dtype(np.int64)), ("t_env", (n,), np.dtype(np.float64)),
            ("done_ids", (n,), np.dtype(np.int64)), ("done_count", (workers,), np.dtype(np.int64)),
            ("need", (1,), np.dtype(np.int64)),
            # each env's digest of everything it did so far (SHA-256; Shard.hash)
            ("digests", (n, 32), np.dtype(np.uint8))]
        info = info or {}
        for k, dt in info.items():  # each declared key (info_fields) and its mask
            layout += [(f"info:{k}", (n,), dt), (f"info:_{k}", (n,), np.dtype(np.bool_))]
        layout += [(f"obs:{k}", (n, *shape), dtype) for k, (shape, dtype) in obs.items()]
        if render is not None:
            layout += [("render", render, np.dtype(np.uint8))]
        if params:  # domain randomisation: each env's last draw, and who reset this time
            layout += [("rand", (n, params), np.dtype(np.float64)),
                       ("rand:_reset", (n,), np.dtype(np.bool_))]
        if final:  # SAME_STEP autoreset: the last observation and info of an ended episode
            layout += [("final", (n,), np.dtype(np.bool_))]
            layout += [(f"final:info:{k}", (n,), dt) for k, dt in info.items()]
            layout += [(f"final:obs:{k}", (n, *shape), dtype) for k, (shape, dtype) in obs.items()]
        out, offset = [], 0
        for name, shape, dtype in layout:
            offset = -(-offset // 64) * 64
            out.append((name, shape, dtype, offset))
            offset += int(np.prod(shape)) * dtype.itemsize
        return out

    @classmethod
    def size(cls, n: int, obs: dict[str, tuple[tuple[int, ...], np.dtype]], workers: int,
             render: tuple[int, ...] | None, final: bool = False, params: int = 0,
             info: dict[str, np.dtype] | None = None) -> int:
        """Bytes of the segment that holds them."""
        name, shape, dtype, offset = cls._layout(n, obs, workers, render, final, params,
                                                 info)[-1]
        return offset + int(np.prod(shape)) * dtype.itemsize


class Shard:
    """The worlds ``lo`` to ``hi - 1`` of one worker, and how it steps them.

    Two paths write the same shared arrays with the same numbers:

    * **synchronous** (:meth:`run`): a whole-shard command (``STEP``,
      ``RESET``, ``RENDER``) from :meth:`DmxVectorEnv.step` and ``reset``;
    * **asynchronous** (:meth:`run_pending`): the envs whose ``cmd`` the parent
      set (:meth:`DmxVectorEnv.send`), each announced when done in this
      worker's completion ring (see :class:`Arrays`).

    Autoreset (``mode``, one of gymnasium's) is the shard's, shared by both
    paths: ``NEXT_STEP`` resets an ended env at its next step, ``SAME_STEP``
    resets it in the step that ended it (the last observation and info go
    to the ``final:`` arrays), ``DISABLED`` never resets on its own.
    """

    def __init__(self, index: int, lo: int, hi: int, v: dict[str, np.ndarray],
                 envs: list[Any], render: tuple[int, ...] | None, ready: Any,
                 mode: str = NEXT_STEP, done: Any = None) -> None:
        self.index, self.lo, self.hi = index, lo, hi
        self.done = done
        self.last_sequence = 0
        self.v, self.envs, self.render_shape = v, envs, render
        self.mode = mode
        self.pending_reset = [False] * len(envs)
        self.keys = [k for k in v if k.startswith("obs:")]
        self.announcer = Announcer(index, lo, hi, v, ready)
        self.hashes = [hashlib.sha256() for _ in envs]
        self.rand_names = rand_names(envs[0]) if envs else []
        self.info = info_fields(envs[0]) if envs else {}
        self.blank = {key: dtype.type(0).item() for key, dtype in self.info.items()}
        # With the batch renderer, the shard's envs' cameras are drawn together (a
        # multi-robot world draws its own robots' cameras in one call: no camera_jobs).
        self.camera_jobs: list[Any] = []
        for env in envs:
            if (hasattr(env, "camera_jobs") and getattr(env, "renderer", None) == "batch"
                    and env.camera is not None):
                env.camera_jobs = self.camera_jobs

    def put(self, i: int | slice, obs: Any, prefix: str = "") -> None:
        """Write ``obs`` into env ``i``'s rows of the observation arrays (``i`` a slice:
        those envs', ``obs`` one per env), or of the ``prefix``-ed ones."""
        for key in self.keys:
            self.v[prefix + key][i] = obs[key[4:]] if key != "obs:" else obs

    def serve(self, t_start: float) -> bool:
        """Carry out the parent's command for this shard (the word at ``command[index]``,
        taken at ``t_start``); False for ``CLOSE``.

        The body of a worker's loop (:func:`run_worker`), and all of the in-process
        batch's (:mod:`dmxshm.batch.serial`), which calls it where it would post
        ``go``. The command is one word, ``sequence << 8 | command``: a whole-shard
        command runs once per sequence number (a wake-up left over from asynchronous
        sends never runs it twice); ``PENDING`` steps the envs the parent sent.
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
        """Close every env of the shard."""
        for env in self.envs:
            env.close()

    def run(self, command: int) -> None:
        """One synchronous command for the whole shard."""
        if command == RENDER:
            v, lo = self.v, self.lo
            for j, env in enumerate(self.envs):
                if self.render_shape is not None and lo + j < self.render_shape[0]:
                    v["render"][lo + j] = env.render()
            return
        self.step_envs(list(range(len(self.envs))), [command] * len(self.envs))

    def step_envs(self, js: list[int], commands: list[int]) -> None:
        """Reset or step the envs ``lo + j`` for ``j`` in ``js`` (``RESET`` or ``STEP``,
        or a reset anyway where the env's episode ended: ``NEXT_STEP`` autoreset),
        then write their results with one assignment per array.

        Both paths go through here, so a world gives the same numbers whichever
        path steps it.
        """
        v, lo, envs, pending_reset = self.v, self.lo, self.envs, self.pending_reset
        k = len(js)
        rewards, ended, cut = [0.0] * k, [False] * k, [False] * k
        # each declared info key's values and masks (the key is in the row's info)
        values = {key: [blank] * k for key, blank in self.blank.items()}
        masks = {key: [False] * k for key in self.info}
        acted = [False] * k  # stepped with its action (and perhaps reset after)
        whole = k == len(envs)  # every env of the shard, in order (the synchronous path)
        rows: Any = slice(lo, self.hi) if whole else [lo + j for j in js]
        wheels = v["actions"][rows].tolist()
        next_step, same_step = self.mode == NEXT_STEP, self.mode == SAME_STEP
        finals: list[bool] = [False] * k
        resets: list[bool] = [False] * k
        observed: list[Any] = [None] * k
        last: list[tuple[Any, dict[str, Any]] | None] = [None] * k
        for m, j in enumerate(js):
            env = envs[j]
            if commands[m] == RESET or pending_reset[j]:
                seed = int(v["seeds"][lo + j]) if commands[m] == RESET else -1
                obs, info = env.reset(seed=None if seed < 0 else seed)
                pending_reset[j] = False
                resets[m] = True
            else:
                obs, rewards[m], ended[m], cut[m], info = env.step_wheels(*wheels[m])
                acted[m] = True
                if next_step:
                    pending_reset[j] = ended[m] or cut[m]
                elif same_step and (ended[m] or cut[m]):
                    # as SyncVectorEnv: the episode's last obs and info go to
                    # final_obs and final_info; the reset's are the step's
                    last[m] = (obs, info)
                    finals[m] = True
                    obs, info = env.reset()
                    resets[m] = True
            if resets[m] and self.rand_names:
                v["rand"][lo + j] = [info["randomization"][p] for p in self.rand_names]
            for key in values:
                if key in info:
                    values[key][m], masks[key][m] = info[key], True
            observed[m] = obs
        if self.camera_jobs:  # every env's camera of this step, drawn in one call
            draw_cameras(self.camera_jobs)
        for m, j in enumerate(js):
            ended_last = last[m]
            if ended_last is not None:
                self.put_final(lo + j, *ended_last)
            self.put(lo + j, observed[m])
            self.hash(j, wheels[m] if acted[m] else None, rewards[m], ended[m],
                      cut[m], finals[m])
        if same_step:
            v["final"][rows] = finals
        v["rewards"][rows] = rewards
        v["terminated"][rows] = ended
        v["truncated"][rows] = cut
        for key in values:
            v[f"info:{key}"][rows] = values[key]
            v[f"info:_{key}"][rows] = masks[key]
        if self.rand_names:
            v["rand:_reset"][rows] = resets

    def hash(self, j: int, wheels: list[float] | None, reward: float, ended: bool, cut: bool,
             final: bool) -> None:
        """Add what env ``lo + j`` just did to its digest, and publish the digest: the
        action it stepped with (none for a reset), its world's state in full, the
        observation it returned (and an ended episode's last one), the reward and
        flags. Per env, so the batch's digest is the same with any number of workers
        (:attr:`~dmxshm.batch.vector.DmxVectorEnv.trajectory_digest`)."""
        h, i, v = self.hashes[j], self.lo + j, self.v
        h.update(b"r" if wheels is None else struct.pack("<cff", b"s", *wheels))
        h.update(self.envs[j].world.state(copy=False).tobytes())
        for prefix in ("final:", "") if final else ("",):
            for key in self.keys:
                h.update(v[prefix + key][i].tobytes())
        h.update(struct.pack("<d??", reward, ended, cut))
        v["digests"][i] = np.frombuffer(h.digest(), np.uint8)

    def put_final(self, i: int, obs: Any, info: dict[str, Any]) -> None:
        """The last observation and info of env ``i``'s episode (``SAME_STEP``)."""
        self.put(i, obs, "final:")
        for key, blank in self.blank.items():
            self.v[f"final:info:{key}"][i] = info.get(key, blank)

    def run_pending(self) -> None:
        """Step the envs of the shard that the parent sent, then announce them
        (:mod:`dmxshm.batch.completions`)."""
        v, lo = self.v, self.lo
        cmd = v["cmd"]
        # a copy: the parent may set other envs' cmd while this reads them
        mine = cmd[lo:self.hi].copy()
        js = np.flatnonzero(mine).tolist()
        if not js:
            return
        commands = mine[js].tolist()
        envs = [lo + j for j in js]
        cmd[envs] = 0  # none of them can be sent again before it is announced
        self.step_envs(js, commands)
        self.announcer.announce(envs)


class NoPost:
    """A semaphore nobody waits on: the in-process batch's ``ready`` and ``done`` (its
    caller is the one who would wait, and it is the one who runs the shard)."""

    def release(self) -> None:
        pass


def open_shard(index: int, memory: Any, lo: int, hi: int, n: int, shards: int,
               env_kwargs: dict[str, Any], mode: str, robots_per_world: int | None,
               ready: Any, done: Any) -> Shard:
    """Shard ``index``: its envs made (the rows ``lo`` to ``hi - 1``; with
    ``robots_per_world``, whole multi-robot worlds,
    :class:`~dmxshm.marl.shard.WorldShard`) over the batch's arrays in ``memory`` (a
    :class:`~dmxshm.shm.segment.Segment`, or the in-process batch's memory), posting
    ``ready`` and ``done`` as :class:`~dmxshm.batch.completions.Announcer` and
    :meth:`Shard.serve` say. A worker's, or the in-process batch's only one.
    """
    from dmxshm.batch.kinds import env_class, multi

    env_kwargs = dict(env_kwargs)
    env_type = env_class(env_kwargs.pop("version", "v0"))
    render = render_shape(n, env_kwargs)
    envs: list[Any] = []
    try:
        if robots_per_world is None:
            envs = [env_type(**env_kwargs) for _ in range(lo, hi)]
            space = envs[0].observation_space
        else:
            envs = [multi("world")(robots_per_world, **env_kwargs)
                    for _ in range(lo, hi, robots_per_world)]
            space = multi("space")(envs[0])
        arrays = Arrays(memory, n, fields(space), shards, render,
                        params=len(rand_names(envs[0])),
                        final=mode == SAME_STEP, info=info_fields(envs[0]))
        if robots_per_world is None:
            return Shard(index, lo, hi, arrays.views, envs, render, ready, mode, done)
        shard: Shard = multi("shard")(index, lo, hi, arrays.views, envs, robots_per_world,
                                      ready, mode, done)
        return shard
    except BaseException:
        for env in envs:
            env.close()
        raise


def run_worker(index: int, ports: BatchPorts, lo: int, hi: int, n: int, workers: int,
               env_kwargs: dict[str, Any], parent_pid: int, spin_s: float,
               mode: str = NEXT_STEP, egl_device: str | None = None,
               robots_per_world: int | None = None) -> None:
    """Main loop of batch worker ``index``: worlds ``lo`` to ``hi - 1`` (see
    :func:`open_shard`), each command carried out by :meth:`Shard.serve`.

    ``egl_device``: the parent's EGL probe result
    (:func:`dmxshm.world.renderers.egl_device`), so the worker does not probe again.
    """
    from dmxshm.world.renderers import adopt_probe

    adopt_probe(egl_device)
    shard: Shard | None = None
    try:
        seg = Segment.attach(ports.arrays)
        go = posix_ipc.Semaphore(ports.go[index])
        shard = open_shard(index, seg, lo, hi, n, workers, env_kwargs, mode, robots_per_world,
                           ready=posix_ipc.Semaphore(ports.ready),
                           done=posix_ipc.Semaphore(ports.done))
        while True:
            poll(go, spin_s)
            while True:  # wait for a command; give up if the parent is gone
                try:
                    acquire(go, settings.LIVENESS_POLL_S * 20)
                    break
                except posix_ipc.BusyError:
                    if os.getppid() != parent_pid:
                        return
            if not shard.serve(time.perf_counter()):
                break
    finally:
        # A dying parent sends its death signal once per thread that exits:
        # the clean-up below must not be cut short by the next one.
        ignore_stop_signals()
        signalled = isinstance(sys.exc_info()[1], Terminated)
        if shard is not None:
            shard.close()
        if parent_gone(parent_pid, wait_s=PARENT_GONE_WAIT_S if signalled else 0.0):
            # It died without unlinking (SIGKILL: a killed Ray actor, the OOM
            # killer). Every worker gets here (death signal, or the liveness
            # check above); whichever is first removes the batch's objects.
            unlink_names([ports.arrays], ports.semaphores())
