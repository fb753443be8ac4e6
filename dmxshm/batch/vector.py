"""Batch mode: a Gymnasium ``VectorEnv`` of DuckieLane worlds over shared memory.

``make_vec(num_envs, num_workers)`` shards N worlds over W worker processes
(default: one per CPU this process may run on, its affinity: never more), or
with ``num_workers=0`` steps them in the calling process
(:mod:`dmxshm.batch.serial`: the worker's own code, run where the parent would wake a
worker; the same rows bit for bit).
Actions, observations, rewards and flags live in shared-memory arrays; a
step is one semaphore post to each worker and one back, and nothing is
pickled on the step path.

Autoreset: any of gymnasium's modes, ``make_vec(..., autoreset_mode=...)``,
each as ``SyncVectorEnv`` does it. ``NEXT_STEP`` (default): the step after an
episode ended resets that sub-environment and returns its first observation,
with reward 0 and both flags False; the action given for it is ignored.
``SAME_STEP``: the step that ends an episode resets the env and puts the
episode's last observation and info in ``info["final_obs"]`` and
``info["final_info"]``. ``DISABLED``: an ended env must be reset with
``reset(options={"reset_mask": mask})`` before it steps again.

``copy=True`` (default) returns arrays that belong to the caller; with
``copy=False`` the observations, rewards and flags are views of the shared
memory, overwritten by the next ``step`` or ``reset``: read or copy them
before stepping again.

Waiting: a ``step`` or ``reset`` that has no answer within ``timeout_s``
(default :data:`dmxshm.settings.BATCH_TIMEOUT_S`, 60 s) raises
:class:`~dmxshm.errors.DmxTimeoutError`; a worker that died or raised makes
it raise :class:`WorkerError` within 0.05 s. A worker waiting for the next
command first polls for ``spin_us`` (default
:data:`dmxshm.settings.BATCH_SPIN_US`, 0: it sleeps at once, or the environment
variable ``DMXSHM_SPIN_US``), giving the core away at every turn, then sleeps: it
shows as busy in ``top`` for up to that long after each step. The parent
always sleeps while the workers step.

Asynchronous API (EnvPool's): with ``make_vec(num_envs, batch_size=B)``,
:meth:`~DmxVectorEnv.async_reset` sends a reset to every env,
:meth:`~DmxVectorEnv.send` ``(actions, env_ids)`` starts a step of those envs
and returns at once, and :meth:`~DmxVectorEnv.recv` returns the first ``B``
envs to finish, in the order they finished, with their indices in
``info["env_id"]``. No step waits for the slowest worker::

    envs = dmxshm.make_vec(16, batch_size=8, seed=0)
    envs.async_reset()
    for _ in range(1000):
        obs, reward, terminated, truncated, info = envs.recv()
        envs.send(policy(obs), info["env_id"])

Each env is in flight (sent, not yet returned by ``recv``) at most once;
autoreset follows the batch's mode as in ``step``; ``reset()`` and ``async_reset()``
wait for the envs in flight and drop what they return; ``step()`` and
``render()`` refuse while any env is in flight.

Workers are started by the process layer (:mod:`dmxshm.proc`): fresh
interpreters that never run the caller's ``__main__`` again, so a script
without an ``if __name__ == "__main__":`` guard works.

Where a step goes: ``make_vec(..., breakdown=True)`` splits every batch
step into the parent's handoff, each worker's work and the wait for the
slowest; :meth:`DmxVectorEnv.breakdown` returns the means
(:mod:`dmxshm.batch.breakdown`).

Profiling: ``make_vec(..., profile=True)`` samples the parent and every
worker with psutil every ``profile_interval_s`` (0.5 s) in a background
thread; :meth:`DmxVectorEnv.profile` returns what it saw (see
:mod:`dmxshm.profiling`).

Multi-agent: ``make_vec(num_envs, robots_per_world=R)`` makes the rows the robots of
``num_envs / R`` worlds of R robots (:mod:`dmxshm.marl`): row ``w * R + i`` is robot i of
world w, a worker holds whole worlds, a robot whose episode ended while its world goes
on is a stopped row (reward 0, flags False, ``info["active"]`` False), and a world
autoresets in the batch's mode when all its robots ended or at truncation; resets,
sends and ``recv`` go by whole worlds; world w is seeded with ``seed + w``.

Determinism: sub-environment i is seeded with ``seed + i`` and owns its own
random stream, so the same seed gives bit-identical observations and
rewards whatever ``num_workers`` is.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from dmxshm import settings
from dmxshm.batch.breakdown import BreakdownMeter, StepBreakdown
from dmxshm.batch.choice import AUTO, WorkerChoice, choose, in_process_step_s, probe_step_s
from dmxshm.batch.completions import Collector
from dmxshm.batch.options import (
    AUTORESET_MODES,
    check_robots_per_world,
    parse_autoreset_mode,
    resolve_spin_s,
    worker_count,
)
from dmxshm.batch.processes import (
    WorkerError,
    failed_worker,
    late_worker,
    start_workers,
    stop_workers,
    stopped_workers,
)
from dmxshm.batch.readout import Readout
from dmxshm.batch.sampling import Sampler
from dmxshm.batch.seeds import check_whole_worlds, reset_mask, row_seeds
from dmxshm.batch.serial import Memory, Serial
from dmxshm.batch.worker import (
    FLUSH,
    PENDING,
    RENDER,
    RESET,
    STEP,
    Arrays,
    NoPost,
    fields,
    info_fields,
    open_shard,
    rand_names,
    render_shape,
)
from dmxshm.errors import DmxError, DmxTimeoutError
from dmxshm.proc.supervisor import Child, Supervisor
from dmxshm.profiling import ProfileReport
from dmxshm.shm.registry import Registry
from dmxshm.shm.waiting import wait_semaphore

__all__ = ["AUTORESET_MODES", "DmxVectorEnv", "WorkerError", "make_vec", "make_vec_v1",
           "parse_autoreset_mode"]
"""The batch's public names, here as they always were (their homes: options, failures)."""


class DmxVectorEnv(VectorEnv):
    """N DuckieLane worlds over W worker processes (see the module docstring)."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP,
                                "render_modes": ["rgb_array"]}

    def __init__(self, num_envs: int, num_workers: int | str | None = AUTO,
                 obs: str = "state",
                 camera: tuple[int, int] = (160, 120), seed: int | None = None,
                 copy: bool = True, timeout_s: float = settings.BATCH_TIMEOUT_S,
                 spin_us: float | None = None, profile: bool = False,
                 profile_interval_s: float = 0.5, breakdown: bool = False,
                 batch_size: int | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                 version: str | type | None = None, robots_per_world: int | None = None,
                 **env_kwargs: Any) -> None:
        from dmxshm.batch import kinds

        group = check_robots_per_world(robots_per_world, num_envs, version, env_kwargs)
        version = version or ("v1" if group else "v0")
        env_type = kinds.env_class(version)

        mode = parse_autoreset_mode(autoreset_mode)
        self.autoreset_mode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, not {num_envs}")
        # rows in groups: a world's robots (multi-agent), else one env each
        self.robots_per_world = group or 1
        self._multi = group is not None
        self.num_worlds = num_envs // self.robots_per_world
        auto = isinstance(num_workers, str)
        if auto and num_workers != AUTO:
            raise ValueError(f"num_workers must be {AUTO!r} (measure a step and pick), None "
                             "(one worker per usable CPU), 0 (this process) or an integer "
                             f">= 1, not {num_workers!r}")
        workers = 0 if auto else min(worker_count(num_workers), self.num_worlds)  # type: ignore[arg-type]
        if batch_size is None:
            batch_size = num_envs
        if not 1 <= batch_size <= num_envs:
            raise ValueError(f"batch_size must be in [1, num_envs={num_envs}], not {batch_size}")
        if batch_size % self.robots_per_world:
            raise ValueError(f"batch_size must be a multiple of robots_per_world "
                             f"({self.robots_per_world}): recv() returns whole worlds, "
                             f"not {batch_size}")
        self.batch_size = batch_size
        self.num_envs = num_envs
        self.copy = copy
        self.timeout_s = timeout_s
        self._spin_s = resolve_spin_s(spin_us)
        self._broken = ""
        self._seed = seed
        self._sequence = 0  # of whole-shard commands
        # asynchronous sends: envs sent and not yet returned by recv(), and the
        # envs the last recv() returned (what comes back: self._collector)
        self._in_flight = np.zeros(num_envs, dtype=np.bool_)
        self._last_ids = np.arange(num_envs)
        # envs whose episode ended and that were not reset since (DISABLED autoreset)
        self._ended = np.zeros(num_envs, dtype=np.bool_)
        self._final = mode == AutoresetMode.SAME_STEP
        kwargs = kinds.env_kwargs(version, obs, camera, env_kwargs)
        if group:
            from dmxshm.batch.lanes import MultiLane, single_space

            # refuses more robots than the map holds
            probe: Any = MultiLane(group, **kwargs)
            probe.observation_space = single_space(probe)
            probe.action_space = single_space(probe, "action")
        else:
            if kinds.normalize(version) not in kinds.DROP_INS:
                kinds.check_keywords(version, env_kwargs)  # a TypeError naming the fix
            probe = env_type(**kwargs)
            if getattr(probe.action_space, "shape", None) != (2,):
                probe.close()
                raise ValueError(f"a batch's actions are 2 floats per row: {env_type.__name__}"
                                 f"'s action space is {probe.action_space}")
        if getattr(probe, "camera", None) is not None:
            # The renderer, auto resolved here once: every worker draws with the same.
            kwargs["renderer"] = probe.renderer
            if probe.renderer == "batch":  # compiled here, not in every worker at once
                from dmxshm.matrix.batch_render import ensure_compiled

                ensure_compiled()
        self.worker_choice: WorkerChoice | None = None
        if auto:  # (measured before the probe is closed; the batch's envs untouched)
            try:
                if env_kwargs.get("physics") == "db18" and (obs == "state" or not group):
                    step_s = in_process_step_s(DmxVectorEnv, num_envs, obs=obs, camera=camera,
                                               version=version, autoreset_mode=mode,
                                               robots_per_world=group, **env_kwargs)
                else:
                    step_s = probe_step_s(probe, group or 1) * self.num_worlds
            except BaseException:
                probe.close()
                raise
            self.worker_choice = choose(step_s, self.num_worlds)
            workers = self.worker_choice.num_workers
        self.num_workers = workers
        shards = max(workers, 1)  # the in-process batch (0 workers) is one shard
        self._meter = BreakdownMeter(shards) if breakdown else None
        self._rand_names = rand_names(probe)
        self._info_fields = info_fields(probe)  # the env's declaration: none of the batch's
        self.version = kinds.normalize(version)
        self.single_observation_space = probe.observation_space
        self.single_action_space = probe.action_space
        probe.close()
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._fields = fields(self.single_observation_space)
        self._registry = Registry()
        self._supervisor = Supervisor()
        self._workers: list[Child] = []
        self._serial: Serial | None = None  # the in-process batch's shard
        self.closed = False
        try:
            self.render_mode = env_kwargs.get("render_mode")
            render = render_shape(num_envs, kwargs)
            size = Arrays.size(num_envs, self._fields, shards, render, self._final,
                               len(self._rand_names), self._info_fields)
            memory: Any = (Memory(size) if workers == 0
                           else self._registry.create_segment("batch", size))
            self._arrays = Arrays(memory, num_envs, self._fields, shards, render, self._final,
                                  len(self._rand_names), self._info_fields)
            self._read = Readout(self._arrays.views, copy, self._info_fields, self._rand_names,
                                 self._final, self.robots_per_world, self._multi)
            r = self.robots_per_world  # each shard holds whole worlds
            bounds = [(int(b[0]) * r, (int(b[-1]) + 1) * r)
                      for b in np.array_split(np.arange(self.num_worlds), shards)]
            self._owner = np.repeat(np.arange(shards), [hi - lo for lo, hi in bounds]).tolist()
            self._collector = Collector(self._arrays.views, bounds)
            if workers == 0:
                # The worker body in this process: its go post runs it (batch.serial).
                self._serial = Serial(open_shard(
                    0, memory, 0, num_envs, num_envs, 1, {**kwargs, "version": env_type},
                    mode.value, group, ready=NoPost(), done=NoPost()))
                self._go: list[Any] = [self._serial]
                self._ready = self._done = NoPost()
            else:
                self._ready, self._done, self._go, started = start_workers(
                    self._registry, self._supervisor, memory.name, bounds, num_envs,
                    {**kwargs, "version": env_type}, self._spin_s, mode.value, group)
                self._workers += started
            self._profiler: Sampler | None = None
            if profile:
                self._profiler = Sampler(
                    {"parent": os.getpid(),
                     **{f"worker-{w}": child.pid for w, child in enumerate(self._workers)}},
                    profile_interval_s, self._registry)
        except BaseException:
            self.close()
            raise

    # -- profiling -------------------------------------------------------------
    def profile(self) -> ProfileReport:
        """The profile so far (``make_vec(..., profile=True)``): one row per process.

        Returns:
            a :class:`~dmxshm.profiling.ProfileReport`: ``processes`` (the
            parent and each ``worker-W``: CPU% mean and peak, affinity, cores
            run on, RSS/USS/PSS peaks, context switches), ``timeline`` (CPU%
            over time), ``shm`` and ``shm_bytes`` (the batch's shared memory),
            ``sampler_cpu_fraction``.

        Raises:
            DmxError: profiling was not asked for, or it stopped at an error.
        """
        if getattr(self, "_profiler", None) is None:
            raise DmxError("this vector env was made without profile=True")
        assert self._profiler is not None
        return self._profiler.report()

    # -- the step path ---------------------------------------------------------
    def _run(self, command: int) -> None:
        with self._breaks():
            self._handoff(command)

    @contextmanager
    def _breaks(self) -> Iterator[None]:
        """Any error in the block leaves the batch refusing every further call."""
        try:
            yield
        except BaseException as exc:
            self._break(exc)
            raise

    def _break(self, exc: BaseException) -> None:
        # A worker may still answer this step later: the next one would
        # read its late answer. Nothing more can be trusted.
        self._broken = f"{type(exc).__name__}: {exc}".strip(": ")

    def _handoff(self, command: int) -> None:
        views = self._arrays.views
        self._sequence += 1
        views["command"][:] = self._sequence << 8 | command
        t0 = time.perf_counter()
        for sem in self._go:
            sem.release()
        deadline = time.monotonic() + self.timeout_s
        # The parent sleeps, once: the worker that finds every shard done posts
        # ``done`` (see run_worker). Polling here (even yielding) would take
        # turns on a core from a worker, measured as 2-10x more preemptions of
        # the worker and no more steps/s.
        finished, sequence = views["finished"], self._sequence
        while not (finished == sequence).all():  # a token left by two last workers
            wait_semaphore(self._done, max(deadline - time.monotonic(), 0.0),
                           check=self._check_workers, on_timeout=self._step_timed_out)
        if self._meter is not None and command == STEP:
            self._meter.add(t0, time.perf_counter(), views["t_start"], views["t_done"])

    def breakdown(self, reset: bool = False) -> StepBreakdown:
        """Where the batch steps since the last reset went (``make_vec(...,
        breakdown=True)``; see :mod:`dmxshm.batch.breakdown`).

        Args:
            reset: start counting anew after this reading.

        Raises:
            DmxError: the env was made without ``breakdown=True``.
        """
        if self._meter is None:
            raise DmxError("this vector env was made without breakdown=True")
        result = self._meter.result()
        if reset:
            self._meter.reset()
        return result

    def _step_timed_out(self, waited_s: float) -> DmxTimeoutError:
        late = np.flatnonzero(self._arrays.views["finished"] != self._sequence).tolist()
        return late_worker(self._workers, late[0] if late else 0, self.timeout_s)

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-environment (``seed``: int for seed + i, or one per env).

        ``options={"reset_mask": mask}`` (a bool array, one per env) resets
        only the envs of the mask; the info then has only theirs (masks
        False elsewhere), and the observations of the others are their last.
        Envs in flight from :meth:`send` are waited for first, and what they
        return is dropped.
        """
        self._check_open()
        mask = reset_mask(options, self.num_envs)  # checked before anything in flight is dropped
        if mask is not None:
            check_whole_worlds(np.flatnonzero(mask), self.robots_per_world,
                               "options['reset_mask']")
        seeds = self._seeds(seed)
        self._settle()
        if mask is None:
            self._arrays.views["seeds"][:] = seeds
            self._run(RESET)
            self._ended[:] = False
            return self._read.obs(), self._read.info()
        # Only the envs of the mask; the others keep their state and observation.
        ids = np.flatnonzero(mask)
        self._arrays.views["seeds"][ids] = np.asarray(seeds, dtype=np.int64)[ids]
        self._dispatch(ids, RESET, ids.tolist())
        with self._breaks():
            self._await(ids.size)
        self._in_flight[self._collector.take(ids.size)] = False
        self._ended[ids] = False
        return self._read.obs(), self._read.reset_info(ids, mask)

    def _seeds(self, seed: int | list[int | None] | None) -> list[int]:
        """One seed per row (:func:`~dmxshm.batch.seeds.row_seeds`). make_vec's seed is
        the first reset's, unless that reset names its own; later resets continue the
        random streams (as gymnasium's seed at make)."""
        given, self._seed = self._seed, None
        return row_seeds(given if seed is None else seed, self.num_envs,
                         self.robots_per_world, self._multi)

    def _settle(self) -> None:
        """Wait for every env in flight from :meth:`send` and drop what it returns."""
        n = int(self._in_flight.sum())
        if n:
            with self._breaks():
                self._await(n)
            if self.autoreset_mode == AutoresetMode.DISABLED:  # dropped, but ended is ended
                ids = np.flatnonzero(self._in_flight)
                self._ended[ids] = self._ended_now(ids)
            self._collector.finished.clear()
            self._in_flight[:] = False
            self._last_ids = np.arange(self.num_envs)

    def _check_idle(self, what: str) -> None:
        if self._in_flight.any():
            raise DmxError(f"{int(self._in_flight.sum())} env(s) are in flight from send(): "
                           f"recv() them before {what}")

    def _check_actions(self, actions: Any, ids: np.ndarray | None = None) -> np.ndarray:
        """``actions`` as float32, one finite row per env of ``ids`` (default: all)."""
        n = self.num_envs if ids is None else ids.size
        a = np.asarray(actions, dtype=np.float32)
        if a.shape != (n, 2):
            raise ValueError(f"actions must have shape ({n}, 2), not {a.shape}")
        if np.count_nonzero(np.isfinite(a)) != a.size:  # not .all(): 1.7 us
            rows = sorted({int(i) for i in np.argwhere(~np.isfinite(a))[:, 0]})
            envs = rows if ids is None else ids[rows].tolist()
            raise ValueError(f"actions of sub-environment(s) {envs} are not finite: {a[rows]}")
        return a

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        self._check_open()
        self._check_idle("step()")
        self._check_not_ended(None)
        v = self._arrays.views
        v["actions"][:] = self._check_actions(actions)
        self._run(STEP)
        if self.autoreset_mode == AutoresetMode.DISABLED:
            self._ended[:] = self._ended_now(None)
        return (self._read.obs(), self._read.out("rewards"), self._read.out("terminated"),
                self._read.out("truncated"), self._read.info())

    def _ended_now(self, ids: np.ndarray | None) -> np.ndarray:
        """Which of the rows ``ids`` (default: all) must be reset before they step
        again: an env whose episode ended, or every row of a world whose robots all
        ended (a robot that ended in a world that goes on is a stopped row)."""
        v = self._arrays.views
        rows = slice(None) if ids is None else ids
        ended = v["terminated"][rows] | v["truncated"][rows]
        if not self._multi:
            return ended
        # a robot goes on if it acted in this step and its episode did not end in it
        going = v["info:active"][rows] & ~ended
        r = self.robots_per_world
        return np.repeat(~going.reshape(-1, r).any(axis=1), r)

    def _check_not_ended(self, ids: np.ndarray | None) -> None:
        """With DISABLED autoreset, an env whose episode ended must be reset first."""
        ended = self._ended if ids is None else self._ended[ids]
        if np.count_nonzero(ended):
            envs = np.flatnonzero(ended) if ids is None else ids[ended]
            raise DmxError(
                f"the episode of env(s) {envs.tolist()} ended and autoreset_mode is DISABLED: "
                "reset them first with envs.reset(options={'reset_mask': mask}), mask a bool "
                f"array of {self.num_envs} (num_envs), True at those envs (after step(): "
                "terminated | truncated)")

    # -- the asynchronous API (EnvPool's) ---------------------------------------
    def async_reset(self, *, seed: int | list[int | None] | None = None) -> None:
        """Send a reset to every sub-environment; :meth:`recv` returns them as they finish.

        ``seed`` as for :meth:`reset`. Envs still in flight are waited for
        first and what they return is dropped (as :meth:`reset` does).
        """
        self._check_open()
        self._settle()
        self._arrays.views["seeds"][:] = self._seeds(seed)
        self._ended[:] = False
        everyone = np.arange(self.num_envs)
        self._dispatch(everyone, RESET, everyone.tolist())

    def send(self, actions: Any, env_ids: Any = None) -> None:
        """Start one step of the envs ``env_ids`` with ``actions`` (one row per env).

        Args:
            actions: shape ``(len(env_ids), 2)``.
            env_ids: distinct env indices, none of them in flight (sent and
                not yet returned by :meth:`recv`); by default the envs the
                last :meth:`recv` returned (all envs before the first one).

        Autoreset follows the batch's mode, as in :meth:`step`: with
        ``NEXT_STEP`` an env whose episode ended resets at its next send,
        whose action it ignores; with ``DISABLED`` such an env is refused.
        """
        self._check_open()
        ids = self._last_ids if env_ids is None else np.asarray(env_ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0:
            raise ValueError(f"env_ids must be a non-empty 1-d sequence, not {env_ids!r}")
        listed = ids.tolist()  # a few envs: Python's min, max and set beat numpy's calls
        if min(listed) < 0 or max(listed) >= self.num_envs:
            raise ValueError(f"env_ids must be in [0, {self.num_envs}), got {listed}")
        if len(set(listed)) != len(listed):
            raise ValueError(f"env_ids must be distinct, got {listed}")
        check_whole_worlds(ids, self.robots_per_world, "env_ids")
        busy = self._in_flight[ids]
        if np.count_nonzero(busy):
            raise DmxError(f"env(s) {ids[busy].tolist()} are in flight: "
                           "recv() them before sending to them again")
        self._check_not_ended(ids)
        self._arrays.views["actions"][ids] = self._check_actions(actions, ids)
        self._dispatch(ids, STEP, listed)

    def _dispatch(self, ids: np.ndarray, command: int, listed: list[int]) -> None:
        v = self._arrays.views
        self._in_flight[ids] = True
        v["cmd"][ids] = command
        owner = self._owner
        for w in {owner[i] for i in listed}:
            v["command"][w] = PENDING
            self._go[w].release()

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The first ``batch_size`` envs to finish what was sent to them.

        Returns:
            ``(obs, rewards, terminated, truncated, info)`` for those envs,
            in the order they finished; ``info["env_id"]`` names them (int32).

        Raises:
            DmxError: fewer than ``batch_size`` envs are in flight.
            WorkerError: a worker died or raised (within 0.05 s).
            DmxTimeoutError: nothing came within ``timeout_s``.
        """
        self._check_open()
        k = self.batch_size
        flying = np.count_nonzero(self._in_flight)
        if flying < k:
            raise DmxError(f"recv() needs {k} env(s) in flight (batch_size), there are "
                           f"{flying}: send() to more envs first")
        try:
            self._await(k)
        except BaseException as exc:
            self._break(exc)
            raise
        ids = self._collector.take(k)
        self._in_flight[ids] = False
        self._last_ids = ids
        v = self._arrays.views
        obs: Any  # .take(): a third of the time of obs[ids] for rows of a 2-d array
        if "obs:" in v:
            obs = v["obs:"].take(ids, axis=0)
        else:
            obs = {key[4:]: v[key].take(ids, axis=0) for key in self._read.obs_keys}
        info = self._read.info(ids)
        info["env_id"] = ids.astype(np.int32)
        terminated, truncated = v["terminated"][ids], v["truncated"][ids]
        if self.autoreset_mode == AutoresetMode.DISABLED:
            self._ended[ids] = self._ended_now(ids)
        return obs, v["rewards"][ids], terminated, truncated, info

    def _await(self, k: int) -> None:
        """Wait until ``k`` finished envs are held (:mod:`dmxshm.batch.completions`)."""
        deadline = time.monotonic() + self.timeout_s
        collector = self._collector
        try:
            while not collector.ready_for(k):
                if self._serial is not None:  # it ran every env it was sent at the send
                    raise DmxError(f"the in-process batch holds {len(collector.finished)} "
                                   f"finished env(s), not the {k} it waits for")
                wait_semaphore(self._ready, max(deadline - time.monotonic(), 0.0),
                               check=self._check_workers, on_timeout=self._recv_timed_out)
        finally:
            collector.stop_waiting()

    def _check_workers(self) -> None:
        """Raise WorkerError for the root cause if some worker ended
        (:func:`~dmxshm.batch.processes.failed_worker`)."""
        error = failed_worker(self._workers, self._supervisor)
        if error is not None:
            raise error

    def _recv_timed_out(self, waited_s: float) -> DmxTimeoutError:
        return DmxTimeoutError(
            f"recv() waited {waited_s:.1f} s (timeout_s) for {self.batch_size} env(s); "
            f"{len(self._collector.finished)} finished{stopped_workers(self._workers)}")

    @property
    def trajectory_digest(self) -> str:
        """SHA-256 (hex) over everything the batch's envs did so far: each env's own
        digest (the actions it stepped with, its world's state in full, the
        observations, rewards and flags it returned), in env order, so the same
        seeds and actions give the same digest with any number of workers. Read it
        between steps (after ``step``, ``reset`` or ``recv`` returned). A batch that
        steps its envs as arrays hashes their steps in blocks (:data:`~dmxshm.batch.
        array_shard.HELD_STEPS`); reading the digest hashes what is held first, so then
        no env may be in flight from :meth:`send`.

        Example:
            >>> import dmxshm, numpy as np
            >>> def run(workers):
            ...     envs = dmxshm.make_vec(2, num_workers=workers)
            ...     try:
            ...         _ = envs.reset(seed=1), envs.step(np.full((2, 2), 0.5, np.float32))
            ...         return envs.trajectory_digest
            ...     finally:
            ...         envs.close()
            >>> run(1) == run(2)
            True
        """
        self._check_open()
        views = self._arrays.views
        if views["held"].any():  # steps a shard holds unhashed (a batch stepped as arrays)
            self._check_idle("trajectory_digest")
            self._run(FLUSH)
        return hashlib.sha256(b"dmxshm batch digest 1\0" + views["digests"].tobytes()
                              ).hexdigest()

    def render(self) -> np.ndarray | None:  # type: ignore[override]  # one tiled image
        """The camera images of the first sub-environments (up to :data:`RENDER_ENVS`),
        tiled two by two, with ``render_mode="rgb_array"``; None without a render mode.
        """
        if self.render_mode != "rgb_array":
            return None
        self._check_open()
        self._check_idle("render()")
        self._run(RENDER)
        images = self._arrays.views["render"]
        k, h, w, _ = images.shape
        cols = min(k, 2)
        rows = -(-k // cols)
        out = np.zeros((rows * h, cols * w, 3), np.uint8)
        for i in range(k):
            r, c = divmod(i, cols)
            out[r * h:(r + 1) * h, c * w:(c + 1) * w] = images[i]
        return out

    def _check_open(self) -> None:
        if self.closed:
            raise DmxError("this vector env is closed")
        if self._broken:
            raise DmxError(f"this vector env stopped at an error ({self._broken}); "
                           "close it and make a new one")

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the workers and unlink the shared memory; always returns.

        With ``profile=True``, the profile stays readable after ``close()``.
        """
        workers, self._workers = getattr(self, "_workers", []), []
        try:
            sampler = getattr(self, "_profiler", None)
            if sampler is not None:
                sampler.stop()
            serial, self._serial = getattr(self, "_serial", None), None
            if serial is not None:
                serial.shard.close()
            stop_workers(workers, getattr(self, "_go", []),
                         self._arrays.views["command"] if workers else None)
        finally:
            try:
                if hasattr(self, "_supervisor"):
                    self._supervisor.close()
            finally:
                if hasattr(self, "_registry"):
                    self._registry.unlink_all()


def make_vec(num_envs: int, num_workers: int | str | None = AUTO, obs: str = "state",
             camera: tuple[int, int] = (160, 120), seed: int | None = None, copy: bool = True,
             batch_size: int | None = None, version: str | type | None = None,
             robots_per_world: int | None = None, **env_kwargs: Any) -> DmxVectorEnv:
    """A :class:`DmxVectorEnv` of ``num_envs`` DuckieLane worlds (see the module docstring).

    ``version``: ``"v0"`` (the default; ``"v1"`` with ``robots_per_world``), ``"v1"``
    (:mod:`dmxshm.batch.env_v1`: PWM actions, sensor noise, the lens camera, routes),
    or a gym-duckietown drop-in,
    ``"duckietown"`` or ``"simulator"`` (:mod:`dmxshm.duckietown`; its arguments in
    ``env_kwargs``, its image ``camera_width`` x ``camera_height``); ``env_kwargs``
    go to each env. Or a gymnasium env class of one robot whose action is 2 floats
    (its arguments in ``env_kwargs``; importable by the workers: not ``__main__``'s):
    the batch steps it with ``step``, and gives as info arrays the keys it declares in
    its ``batch_info`` class attribute (key -> dtype).

    ``num_workers``: ``"auto"`` (the default) picks 0 or one per usable CPU by
    measuring a step (:mod:`dmxshm.batch.choice`: a step cheaper than the handoff to
    workers stays here; the batch's ``num_workers`` says what was picked, its
    ``worker_choice`` why); worker processes, an integer >= 1 (at most ``num_envs`` are
    used), or None for one per usable CPU; 0 steps every env in this
    process (:mod:`dmxshm.batch.serial`: the workers' own code, so the same rows bit
    for bit in every autoreset mode and through ``send``/``recv``; no process starts,
    nothing in ``/dev/shm``, an env's error raised as it is). ``batch_size`` (default
    ``num_envs``) is how many envs :meth:`DmxVectorEnv.recv` returns in the asynchronous API.

    ``robots_per_world=R``: a multi-agent batch for parameter sharing. Its
    ``num_envs`` rows are the robots of ``num_envs / R`` worlds
    (:class:`~dmxshm.batch.lanes.MultiLane`, each robot DuckieLane-v1's, colliding
    with the others); see the module docstring.

    Raises:
        ValueError: ``num_workers`` is negative, or not an integer;
            ``robots_per_world`` below 1, or ``num_envs`` not a multiple of it.
        MultiLaneError: more robots per world than the map holds.
    """
    return DmxVectorEnv(num_envs, num_workers, obs=obs, camera=camera, seed=seed, copy=copy,
                        batch_size=batch_size, version=version,
                        robots_per_world=robots_per_world, **env_kwargs)


def make_vec_v1(num_envs: int, **kwargs: Any) -> DmxVectorEnv:
    """``gymnasium.make_vec("dmxshm/DuckieLane-v1", n)``: :func:`make_vec` of v1."""
    return DmxVectorEnv(num_envs, version="v1", **kwargs)
