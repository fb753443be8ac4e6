"""A batch worker: the worlds of one shard (:mod:`dmxshm.batch.shard`), stepped at each
command of the parent.

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

import sys
import time
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import posix_ipc

from dmxshm import settings
from dmxshm.batch.shard import (  # noqa: F401  (the commands and modes, named here too)
    CLOSE,
    DISABLED,
    FLUSH,
    NEXT_STEP,
    PENDING,
    RENDER,
    RESET,
    SAME_STEP,
    STEP,
    OneRobot,
    Shard,
    info_fields,
    rand_names,
)
from dmxshm.proc.child import ignore_stop_signals, parent_gone
from dmxshm.proc.outcome import Terminated
from dmxshm.shm.registry import unlink_names
from dmxshm.shm.segment import Segment
from dmxshm.shm.waiting import acquire, spin_until


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
            # each env's digest of everything it did so far (SHA-256; Shard.hash), and
            # the steps each worker holds not yet hashed (ArrayShard; FLUSH hashes them)
            ("digests", (n, 32), np.dtype(np.uint8)), ("held", (workers,), np.dtype(np.int64))]
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
            for k, dt in info.items():  # each key's value and mask (in the last info)
                layout += [(f"final:info:{k}", (n,), dt),
                           (f"final:info:_{k}", (n,), np.dtype(np.bool_))]
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


class NoPost:
    """A semaphore nobody waits on: the in-process batch's ``ready`` and ``done`` (its
    caller is the one who would wait, and it is the one who runs the shard)."""

    def release(self) -> None:
        pass


def open_shard(index: int, memory: Any, lo: int, hi: int, n: int, shards: int,
               env_kwargs: dict[str, Any], mode: str, robots_per_world: int | None,
               ready: Any, done: Any) -> Shard:
    """Shard ``index``: its worlds made (the rows ``lo`` to ``hi - 1``: envs of one robot,
    :class:`~dmxshm.batch.shard.OneRobot`, or with ``robots_per_world`` multi-robot
    worlds) over the batch's arrays in ``memory`` (a
    :class:`~dmxshm.shm.segment.Segment`, or the in-process batch's memory), posting
    ``ready`` and ``done`` as :class:`~dmxshm.batch.completions.Announcer` and
    :meth:`Shard.serve` say. A worker's, or the in-process batch's only one.
    """
    from dmxshm.batch.kinds import env_class

    env_kwargs = dict(env_kwargs)
    version = env_kwargs.pop("version", "v0")
    render = render_shape(n, env_kwargs)
    worlds: list[Any] = []
    camera_jobs: list[Any] = []  # the batch renderer's: every camera of a step at once
    try:
        if robots_per_world is None:
            env_type = env_class(version)
            worlds = [OneRobot(env_type(**env_kwargs), camera_jobs) for _ in range(lo, hi)]
            space = worlds[0].env.observation_space
        else:
            from dmxshm.batch.lanes import MultiLane, single_space

            worlds = [MultiLane(robots_per_world, **env_kwargs)
                      for _ in range(lo, hi, robots_per_world)]
            space = single_space(worlds[0])
        arrays = Arrays(memory, n, fields(space), shards, render,
                        params=len(rand_names(worlds[0])),
                        final=mode == SAME_STEP, info=info_fields(worlds[0]))
        kind: type[Shard] = Shard
        first = getattr(worlds[0], "env", None) if robots_per_world is None else worlds[0]
        if getattr(first, "physics", None) == "db18":
            # (imported here: their kernels compile, or load, in the processes that use them)
            if robots_per_world is None:
                from dmxshm.batch.array_shard import ArrayShard, eligible

                kind = ArrayShard if eligible(worlds, mode) else Shard
            else:
                from dmxshm.batch import multi_array_shard as multi

                kind = multi.MultiArrayShard if multi.eligible(worlds, mode) else Shard
        return kind(index, lo, hi, arrays.views, worlds, render, ready, mode, done,
                    camera_jobs)
    except BaseException:
        for world in worlds:
            world.close()
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
                    if parent_gone(parent_pid):
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
