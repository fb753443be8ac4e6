"""``dmxshm bench vector``: the batch VectorEnv beside gymnasium's, in one run.

For each observation kind, on the same environment (``dmxshm/DuckieLane-v0``)
and the same number of sub-environments, with random actions, it measures
env-steps per second of:

* ``single``: one environment stepped in this process (the per-core rate);
* ``dmxshm``: :func:`dmxshm.make_vec` with one worker per core;
* ``sync``: gymnasium's ``SyncVectorEnv`` (everything in this process);
* ``async``: gymnasium's ``AsyncVectorEnv(shared_memory=True)``, one process
  per sub-environment, actions pickled through one pipe each;
* ``dmx-recv``: dmxshm's asynchronous API, ``make_vec(n,
  batch_size=n // 2)``, ``recv()`` then ``send()`` to the envs it returned;
* ``free``: the reference for both dmxshm rows, independent of their
  handoffs: the same worker processes with the same blocks of envs, each
  stepping its block as the in-process batch (``make_vec(block, num_workers=0)``:
  the shard a worker runs, its envs one by one or as arrays where the batch steps
  them so; random actions, autoreset), no parent, nothing handed over; all start
  together at a barrier and run the same windows; the rate is the sum of theirs.
  What the workers could do if the handoff cost nothing. (The in-process dmxshm
  row, ``--workers 0``, has no free row: it hands nothing over.)

Scaling efficiency = dmxshm / (cores x single). Each rate is the median of
three equal windows after a half-second warm-up.

Some ratios cannot exceed 1: the scaling efficiency of independent envs (a core
cannot step more of them than one process alone), and ``recv()`` against the
free-running workers (its ceiling). One above :data:`POSSIBLE` says that its
reference was measured in a slow window (another process took the core), not that
dmxshm won: :func:`measure_again` measures such a reference again, keeps its best
window, and :func:`targets` refuses a figure still impossible after that.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

OBS_CONFIGS = (("state", (160, 120)), ("camera", (64, 64)), ("camera", (160, 120)))


@dataclass
class Row:
    """One measurement."""

    impl: str
    obs: str
    camera: str
    num_envs: int
    num_workers: int
    env_steps_per_s: float
    steps: int
    breakdown: dict[str, Any] | None = None  # dmxshm rows: where a batch step went
    # CPU of the calling thread per env-step in the timed windows (its own
    # work plus the kernel's for its waits and posts, not the workers'):
    # what the handoff costs the caller; None where the caller steps the
    # worlds itself (single, sync) or does nothing (free)
    caller_cpu_us: float | None = None


ENVS = ("v0", "v1")
"""The environments the bench steps: ``dmxshm/DuckieLane-v0`` (the default) or ``-v1``."""


def _factory(obs: str, camera: tuple[int, int], renderer: str = "tiny", env: str = "v0",
             physics: str = "bullet") -> Callable[[], gym.Env]:
    def make() -> gym.Env:
        from dmxshm.batch.env import DuckieLaneEnv
        from dmxshm.batch.env_v1 import DuckieLaneV1Env

        if env == "v1":
            return DuckieLaneV1Env(obs=obs, camera=camera, renderer=renderer, physics=physics)
        return DuckieLaneEnv(obs=obs, camera=camera, renderer=renderer, physics=physics)
    return make


WINDOWS = 3  # the rate is the median of this many equal time windows
WARMUP_S = 0.5  # stepped first, untimed: caches, page faults, lazy imports


class Timed(NamedTuple):
    """What :func:`_windows` measured."""

    rate: float  # median env-steps/s of the windows
    steps: int  # env-steps in the windows
    cpu_s: float  # the calling thread's CPU seconds in the windows (kernel included)


def _windows(step: Callable[[], int], seconds: float) -> Timed:
    """Median rate over WINDOWS windows of ``seconds / WINDOWS`` each, after a warm-up."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < WARMUP_S:
        step()
    rates, total = [], 0
    cpu0 = time.thread_time()
    for _ in range(WINDOWS):
        count = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds / WINDOWS:
            count += step()
        rates.append(count / (time.perf_counter() - t0))
        total += count
    return Timed(float(np.median(rates)), total, time.thread_time() - cpu0)


def _time_vec(env: Any, n: int, seconds: float) -> Timed:
    rng = np.random.default_rng(0)
    env.reset(seed=0)

    def step() -> int:
        env.step(rng.uniform(-1, 1, (n, 2)).astype(np.float32))
        return n
    return _windows(step, seconds)


def _time_async(env: Any, n: int, seconds: float) -> Timed:
    """env-steps/s of recv() then send() to the envs it returned."""
    rng = np.random.default_rng(0)
    env.async_reset(seed=0)
    b = env.batch_size

    def step() -> int:
        _, _, _, _, info = env.recv()
        env.send(rng.uniform(-1, 1, (b, 2)).astype(np.float32), info["env_id"])
        return b
    return _windows(step, seconds)


def free_worker(index: int, lo: int, hi: int, obs: str, camera: tuple[int, int],
                gate: str, parties: int, rates: str, seconds: float,
                renderer: str = "tiny", env: str = "v0", physics: str = "bullet") -> None:
    """A free-running worker (see the module docstring): its rate into ``rates[index]``."""
    from dmxshm.batch.vector import make_vec
    from dmxshm.proc.gate import wait_for_start
    from dmxshm.shm.segment import Segment

    # Its block as the in-process batch: the worker's own shard (its envs one by one, or
    # as arrays where the batch steps them so), with nothing handed over.
    block = make_vec(hi - lo, num_workers=0, obs=obs, camera=camera, renderer=renderer,
                     version=env, physics=physics)
    rng = np.random.default_rng(index)
    block.reset(seed=lo)

    def step() -> int:
        block.step(rng.uniform(-1, 1, (hi - lo, 2)).astype(np.float32))
        return hi - lo
    seg = Segment.attach(rates)
    try:
        wait_for_start(gate, index + 1, f"free-{index}")
        rate = _windows(step, seconds).rate
        seg.ndarray(np.float64, (parties - 1,), 0)[index] = rate
    finally:
        seg.close()
        block.close()


def _time_free(n: int, workers: int, obs: str, camera: tuple[int, int],
               seconds: float, renderer: str = "tiny", env: str = "v0",
               physics: str = "bullet") -> tuple[float, int]:
    """The free-running workers' summed rate (``workers`` blocks, as make_vec splits)."""
    from dmxshm.proc.gate import wait_for_start
    from dmxshm.proc.supervisor import Supervisor
    from dmxshm.shm.barrier import Barrier
    from dmxshm.shm.registry import Registry

    blocks = np.array_split(np.arange(n), workers)
    with Registry() as reg, Supervisor() as sup:
        gate = Barrier.create(reg, "free.gate", workers + 1)
        seg = reg.create_segment("free.rates", 8 * workers)
        for w, block in enumerate(blocks):
            sup.start(f"free-{w}", free_worker, w, int(block[0]), int(block[-1]) + 1, obs,
                      camera, gate.name, workers + 1, seg.name, seconds, renderer, env,
                      physics)
        wait_for_start(gate.name, 0, "bench")
        deadline = time.monotonic() + WARMUP_S + seconds + 60.0
        while sup.running() and time.monotonic() < deadline:
            sup.wait(1.0)
        failed = sup.failure()
        if failed is not None or sup.running():
            raise RuntimeError(f"a free-running worker failed: "
                               f"{failed.describe() if failed else 'it did not end'}")
        rates = seg.ndarray(np.float64, (workers,), 0).copy()
        gate.close()
    rate = float(rates.sum())
    return rate, int(rate * seconds)


def _time_single(obs: str, camera: tuple[int, int], seconds: float,
                 renderer: str = "tiny", version: str = "v0", physics: str = "bullet") -> Timed:
    env = _factory(obs, camera, renderer, version, physics)()
    rng = np.random.default_rng(0)
    env.reset(seed=0)

    def step() -> int:
        _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, 2).astype(np.float32))
        if terminated or truncated:
            env.reset()
        return 1
    try:
        return _windows(step, seconds)
    finally:
        env.close()


PER_WORKERS = ("dmxshm", "dmx-recv", "free")
IMPLS = ("dmxshm", "dmx-recv", "free", "sync", "async")
TARGETS_AT = 16  # the targets are set for 16 sub-environments on 2 cores

POSSIBLE = 1.10
"""The largest value a ratio with a ceiling of 1 may show and still count: 10% for a
window's noise (caches, turbo). Above it, the reference's window was slow."""

CEILINGS = {"scaling_efficiency": "single", "recv_vs_free": "free"}
"""The summary's ratios that cannot exceed 1, each with the reference that bounds it.
The efficiency only where each env is its own work (state, tiny's cameras): the batch
renderer draws many views in one call, which one env alone cannot."""


def run(*, num_envs: Sequence[int] = (16,), workers: int | Sequence[int] | None = None,
        quick: bool = False,
        configs: Sequence[tuple[str, tuple[int, int]]] = OBS_CONFIGS,
        impls: Sequence[str] = IMPLS, seconds: float | None = None,
        progress: Callable[[str], None] | None = None, recheck: bool = False,
        env: str = "v0", physics: str = "bullet") -> list[Row]:
    """Measure every implementation for every observation kind and batch size.

    Args:
        num_envs: batch sizes to measure (each against the same single rate).
        workers: dmxshm worker processes (default: one per core); several to
            measure dmxshm at each (a sweep; the peers are measured once).
        quick: 1.5 s per measurement instead of 4 s.
        configs: ``(obs, (width, height))`` pairs, or ``(obs, (width, height),
            renderer)`` (default tiny; another renderer's rows name it after the size:
            ``64x64/batch``).
        impls: which of :data:`IMPLS` to measure (``dmx-recv`` and ``free``
            at each worker count of the sweep, as ``dmxshm``).
        seconds: time per measurement (overrides ``quick``).
        progress: called with a label before each measurement.
        recheck: measure again a reference whose ratio came out impossible
            (:func:`measure_again`; ``--check`` does).
        env: :data:`ENVS`, the environment every implementation steps; ``physics``:
            its physics (``bullet`` or ``db18``). Rows of another than v0 with Bullet
            name them after the size (``-/v1-db18``).
    """
    from dmxshm.batch.vector import make_vec

    cores = os.cpu_count() or 1
    sweep = [workers] if isinstance(workers, int) else list(workers or [cores])
    seconds = seconds if seconds is not None else (1.5 if quick else 4.0)
    rows = []
    for config in configs:
        obs, camera = config[0], config[1]
        renderer = config[2] if len(config) > 2 else "tiny"  # type: ignore[misc]
        if renderer != "tiny":
            from dmxshm.matrix.batch_render import ensure_compiled

            ensure_compiled()  # (not in the timed windows)
        cam = f"{camera[0]}x{camera[1]}" if obs != "state" else "-"
        if renderer != "tiny":
            cam += f"/{renderer}"
        if (env, physics) != ("v0", "bullet"):
            cam += f"/{env}-{physics}"
        kw: dict[str, Any] = {"version": env, "physics": physics}
        if progress:
            progress(f"single {obs} {cam}")
        rate, steps, _ = _time_single(obs, camera, seconds, renderer, env, physics)
        rows.append(Row("single", obs, cam, 1, 1, rate, steps))
        for n in num_envs:
            for impl, w in [(i, w) for i in impls
                            for w in (sweep if i in PER_WORKERS else [0])
                            if not (i == "free" and w == 0)]:  # (0: in-process)
                if progress:
                    progress(f"{impl} {obs} {cam} x{n}" + (f" w{w}" if w else ""))
                if impl == "dmxshm":
                    vec: Any = make_vec(n, num_workers=w, obs=obs, camera=camera,
                                        breakdown=True, renderer=renderer, **kw)
                    nproc = min(w, n)  # (0: the in-process batch)
                elif impl == "free":
                    nproc = min(w, n)
                    rate, steps = _time_free(n, nproc, obs, camera, seconds, renderer, env,
                                             physics)
                    rows.append(Row(impl, obs, cam, n, nproc, rate, steps))
                    continue
                elif impl == "dmx-recv":
                    vec = make_vec(n, num_workers=w, obs=obs, camera=camera,
                                   batch_size=max(n // 2, 1), renderer=renderer, **kw)
                    nproc = min(w, n)
                elif impl == "sync":
                    vec = gym.vector.SyncVectorEnv(
                        [_factory(obs, camera, renderer, env, physics)] * n)
                    nproc = 1
                elif impl == "async":
                    vec = gym.vector.AsyncVectorEnv(
                        [_factory(obs, camera, renderer, env, physics)] * n,
                        shared_memory=True)
                    nproc = n
                else:
                    raise ValueError(f"unknown implementation {impl!r}")
                try:
                    timer = _time_async if impl == "dmx-recv" else _time_vec
                    rate, steps, cpu_s = timer(vec, n, seconds)
                    cpu_us = cpu_s / steps * 1e6 if impl != "sync" else None
                    split = asdict(vec.breakdown()) if impl == "dmxshm" else None
                finally:
                    vec.close()
                rows.append(Row(impl, obs, cam, n, nproc, rate, steps, split, cpu_us))
    return measure_again(rows, seconds, progress=progress) if recheck else rows


def _ratio(by: dict[str, float], a: str, b: str) -> float | None:
    return by[a] / by[b] if a in by and b in by else None


def summary(rows: list[Row]) -> list[dict[str, Any]]:
    """Per observation kind and batch size: dmxshm's ratio to each peer, scaling efficiency."""
    cores = os.cpu_count() or 1
    out = []
    for obs, cam, n in dict.fromkeys((r.obs, r.camera, r.num_envs) for r in rows
                                     if r.impl != "single"):
        mine = [r for r in rows if (r.obs, r.camera, r.num_envs, r.impl) == (obs, cam, n, "dmxshm")]
        # In a sweep, dmxshm beside its peers is the run with one worker per core (or the most).
        best = min(mine, key=lambda r: (r.num_workers != min(cores, n), -r.num_workers),
                   default=None)
        if best is None:
            continue
        # the peers; the rows made per worker count at dmxshm's count
        by = {r.impl: r.env_steps_per_s for r in rows if (r.obs, r.camera) == (obs, cam)
              and (r.impl == "single" or r.num_envs == n)
              and (r.impl not in PER_WORKERS or r.num_workers == best.num_workers)}
        ratio = partial(_ratio, by)
        out.append({
            "obs": obs, "camera": cam, "num_envs": n, "workers": best.num_workers,
            "vs_sync": ratio("dmxshm", "sync"), "vs_async": ratio("dmxshm", "async"),
            "vs_free": ratio("dmxshm", "free"), "recv_vs_free": ratio("dmx-recv", "free"),
            "recv_vs_async": ratio("dmx-recv", "async"),
            "scaling_efficiency": by["dmxshm"] / (cores * by["single"]),
        })
    return out


def impossible(s: dict[str, Any]) -> list[str]:
    """The ratios of summary line ``s`` above what they can be (:data:`CEILINGS`)."""
    return [k for k in CEILINGS if s.get(k) is not None and s[k] > POSSIBLE
            and not (k == "scaling_efficiency" and "/" in s["camera"])]


def _parse_label(cam: str) -> tuple[tuple[int, int], str, str, str]:
    """A row's ``camera`` label back into its camera size, renderer, env and physics
    (``64x64/batch/v1-db18``: each part after the size optional)."""
    size, *parts = cam.split("/")
    w, h = (int(v) for v in size.split("x")) if size != "-" else (160, 120)
    renderer, env, physics = "tiny", "v0", "bullet"
    for part in parts:
        if part.split("-")[0] in ENVS:
            env, physics = part.split("-", 1)
        else:
            renderer = part
    return (w, h), renderer, env, physics


def measure_again(rows: list[Row], seconds: float, tries: int = 2,
            progress: Callable[[str], None] | None = None) -> list[Row]:
    """Measure again, up to ``tries`` times, each reference whose ratio came out
    impossible (:func:`impossible`), keeping its best window; the rows, updated."""
    rows = list(rows)
    for _ in range(tries):
        redo = {(CEILINGS[k], s["obs"], s["camera"], s["num_envs"], s["workers"])
                for s in summary(rows) for k in impossible(s)}
        if not redo:
            break
        for impl, obs, cam, n, workers in sorted(redo):
            camera, renderer, env, physics = _parse_label(cam)
            if progress:
                progress(f"again: {impl} {obs} {cam}")
            for i, r in enumerate(rows):
                if (r.impl, r.obs, r.camera) != (impl, obs, cam):
                    continue
                if impl == "single":
                    rate = _time_single(obs, camera, seconds, renderer, env, physics).rate
                elif (r.num_envs, r.num_workers) == (n, min(workers, n)):
                    rate = _time_free(n, r.num_workers, obs, camera, seconds, renderer, env,
                                      physics)[0]
                else:
                    continue
                if rate > r.env_steps_per_s:
                    rows[i] = Row(**{**asdict(r), "env_steps_per_s": rate})
    return rows


def targets(rows: list[Row]) -> list[tuple[str, float, bool]]:
    """The issue's targets (16 sub-environments), where this run measured them; a ratio
    that cannot be (:func:`impossible`) is a miss, named so."""
    out = []
    for s in summary(rows):
        if s["num_envs"] != TARGETS_AT:
            continue
        for k in impossible(s):
            out.append((f"{s['obs']} {s['camera']}: {k} {s[k]:.2f} cannot be above 1: its "
                        f"reference ({CEILINGS[k]}) was measured in a slow window; run again "
                        "on a quieter machine", s[k], False))
        if s["obs"] == "state":
            if s["vs_async"] is not None:
                out.append(("state: dmxshm / async >= 2.5", s["vs_async"],
                            s["vs_async"] >= 2.5))
            if s["recv_vs_free"] is not None:
                out.append(("state: recv() at batch_size n/2 / free-running workers >= 0.95",
                            s["recv_vs_free"], 0.95 <= s["recv_vs_free"] <= POSSIBLE))
            out.append(("state: scaling efficiency >= 0.85", s["scaling_efficiency"],
                        0.85 <= s["scaling_efficiency"] <= POSSIBLE))
        elif s["camera"] == "64x64":
            out.append(("camera 64x64: scaling efficiency >= 0.9", s["scaling_efficiency"],
                        0.9 <= s["scaling_efficiency"] <= POSSIBLE))
            if s["vs_async"] is not None:
                out.append(("camera 64x64: dmxshm / async >= 1", s["vs_async"],
                            s["vs_async"] >= 1.0))
    # issue 30: make_vec with the batch renderer against the same with tiny, this run
    by = {(r.camera, r.num_envs): r.env_steps_per_s for r in rows if r.impl == "dmxshm"}
    for (cam, n), rate in by.items():
        tiny = by.get((cam.split("/")[0], n))
        if cam.endswith("/batch") and n == TARGETS_AT and tiny and cam.startswith("64x64"):
            out.append((f"camera {cam}: dmxshm env-steps/s / the same with tiny >= 3 "
                        "(stretch 5)", rate / tiny, rate / tiny >= 3.0))
    return out


def as_dicts(rows: list[Row]) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts."""
    return [asdict(r) for r in rows]
