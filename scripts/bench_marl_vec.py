"""The multi-agent batch against the standard path and against free-running workers
(issue 31, item 2), in one run, on the same worlds.

- ``dmxshm``: ``dmxshm.make_vec(W * R, robots_per_world=R)``, one worker per core;
- ``supersuit``: PettingZoo's standard path, ``dmxshm.parallel_env(robots=R)`` through
  SuperSuit's ``black_death_v3`` (robots that ended stay as zero rows, as the batch's
  stopped rows; one line of it fixed, see ``_black_death``),
  ``pettingzoo_env_to_vec_env_v1`` and ``concat_vec_envs_v1(vec, W, num_cpus=cores,
  base_class="gymnasium")``;
- ``dmxshm-bullet`` (with ``--physics db18``): the batch of the same worlds under
  Bullet, for DB18's ratio;
- ``dmxshm-in-process`` (with ``--physics db18``): the same batch in one process
  (``num_workers=0``: what ``make_vec``'s default picks where a step costs less than
  the handoff), on one core;
- ``free``: one process per core, each stepping its share of the W worlds as the
  in-process batch of them (the shard a worker runs: world by world, or as arrays where
  the batch steps them so) with no handoff at all: the ceiling. Each process holds the
  worlds a batch worker would, seeded as the batch seeds them, and resets a world as
  the batch does (at its next step), so that the two do the same work.

All: state observations, the loop map's defaults, the same constant duties, episodes of
1000 steps; env-steps are rows (robots) stepped. Each way runs ``--seconds`` per
measurement, in the order A B C C B A, ``--rounds`` times (each round makes its envs
afresh). Prints the medians and the ratios; ``--anatomy`` adds where a step of the batch goes
(:func:`anatomy`); ``--json FILE`` keeps the raw figures.

    python scripts/bench_marl_vec.py --worlds 16 --robots 4 --json marl-vec.json
    python scripts/bench_marl_vec.py --physics db18 --rounds 3 --seconds 3
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import time
from datetime import datetime, timezone
from functools import partial
from typing import Any

import numpy as np

import dmxshm
from dmxshm.proc.cpus import usable_cpus

DUTY = 0.25
PHYSICS = {"physics": "bullet"}  # every way's worlds (--physics)


def _rate(step, rows: int, seconds: float) -> float:  # noqa: ANN001
    """Env-steps/s of ``step`` (a vector env's) with constant duties, after 20 steps."""
    a = np.full((rows, 2), DUTY, np.float32)
    for _ in range(20):
        step(a)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step(a)
        steps += 1
    return steps * rows / (time.perf_counter() - t0)


def run_dmxshm(worlds: int, robots: int, cores: int, seconds: float,
               physics: str | None = None, in_process: bool = False) -> float:
    envs = dmxshm.make_vec(worlds * robots, robots_per_world=robots,
                           num_workers=0 if in_process else cores,
                           seed=0, map="loop", physics=physics or PHYSICS["physics"])
    try:
        envs.reset()
        return _rate(envs.step, worlds * robots, seconds)
    finally:
        envs.close()


def anatomy(worlds: int, robots: int, cores: int, seconds: float) -> dict[str, float]:
    """Where a step of the batch goes (ms, means over ``seconds`` of steps): each
    worker's busy time (from taking the command to its shard's end, the workers' own
    clocks in the shared arrays), the slowest worker's, the share no worker is busy
    (handoff and wake-ups: the step's wall time less the slowest worker's), and the
    imbalance (the slowest worker less the mean)."""
    envs = dmxshm.make_vec(worlds * robots, robots_per_world=robots, num_workers=cores,
                           seed=0, map="loop", **PHYSICS)
    try:
        envs.reset()
        a = np.full((worlds * robots, 2), DUTY, np.float32)
        for _ in range(20):
            envs.step(a)
        v = envs._arrays.views
        walls, busy = [], []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            envs.step(a)
            walls.append(time.perf_counter() - t0)
            busy.append(v["t_done"] - v["t_start"])
    finally:
        envs.close()
    w, b = np.array(walls) * 1e3, np.array(busy) * 1e3
    return {"steps": float(len(w)), "wall_ms": float(w.mean()),
            "busy_ms": float(b.mean()), "slowest_ms": float(b.max(1).mean()),
            "balanced_ms": float(b.sum(1).mean() / cores),
            "imbalance_ms": float((b.max(1) - b.mean(1)).mean()),
            "handoff_ms": float((w - b.max(1)).mean())}


def _black_death(env):  # noqa: ANN001, ANN202
    """SuperSuit's ``black_death_v3`` with one line fixed: SuperSuit 3.11 ends the episode
    only when every agent is terminated *and* truncated (``(terminations &
    truncations).all()``), so a world whose robots all left the road was stepped again
    with no agent; here ``|``, as its own ``MarkovVectorEnv`` has it."""
    from supersuit.multiagent_wrappers.black_death import black_death_par

    class Fixed(black_death_par):  # type: ignore[misc, valid-type]
        def step(self, actions):  # noqa: ANN001, ANN202
            active_actions = {agent: actions[agent] for agent in self.env.agents}
            obss, rews, terms, truncs, infos = self.env.step(active_actions)
            black_obs = {agent: np.zeros_like(self.observation_space(agent).low)
                         for agent in self.agents if agent not in obss}
            black = {agent: 0.0 for agent in self.agents if agent not in obss}
            black_infos = {agent: {} for agent in self.agents if agent not in obss}
            done = not self.env.agents
            dones = {agent: done for agent in self.agents}
            if done:
                self.agents.clear()
            return ({**black_obs, **obss}, {**black, **rews}, dones, dones,
                    {**black_infos, **infos})

    return Fixed(env)


def run_supersuit(worlds: int, robots: int, cores: int, seconds: float) -> float:
    import supersuit as ss

    env = _black_death(dmxshm.parallel_env(robots=robots, map="loop", **PHYSICS))
    vec = ss.pettingzoo_env_to_vec_env_v1(env)
    venv = ss.concat_vec_envs_v1(vec, worlds, num_cpus=cores, base_class="gymnasium")
    try:
        venv.reset(seed=0)
        return _rate(venv.step, venv.num_envs, seconds)
    finally:
        venv.close()


def _free_worker(args: tuple[int, int, float, int, str]) -> tuple[int, float]:
    """Worlds ``first`` to ``first + worlds - 1`` of the batch, stepped as the worker that
    holds them steps them: its shard, as the in-process batch of those worlds
    (``make_vec(..., num_workers=0)``: world by world, or as arrays where the batch steps
    them so), seeded as the batch seeds them, autoreset at the next step, with nothing
    handed over."""
    worlds, robots, seconds, first, physics = args
    block = dmxshm.make_vec(worlds * robots, robots_per_world=robots, num_workers=0,
                            seed=first, map="loop", physics=physics)
    try:
        block.reset()
        rows = worlds * robots
        a = np.full((rows, 2), DUTY, np.float32)
        for _ in range(20):
            block.step(a)
        steps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            block.step(a)
            steps += 1
        return steps * rows, time.perf_counter() - t0
    finally:
        block.close()


def run_free(worlds: int, robots: int, cores: int, seconds: float) -> float:
    shares = np.array_split(np.arange(worlds), cores)
    with mp.get_context("spawn").Pool(cores) as pool:
        out = pool.map(_free_worker, [(len(s), robots, seconds, int(s[0]),
                                       PHYSICS["physics"]) for s in shares if len(s)])
    return sum(n / t for n, t in out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=int, default=16)
    parser.add_argument("--robots", type=int, default=4)
    parser.add_argument("--cores", type=int, default=len(usable_cpus()))
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json")
    parser.add_argument("--anatomy", action="store_true",
                        help="also: where a step of the batch goes (anatomy())")
    parser.add_argument("--physics", choices=("bullet", "db18"), default="bullet",
                        help="every way's worlds; db18 adds dmxshm-bullet, the batch of the "
                             "same worlds under Bullet, measured beside")
    args = parser.parse_args()
    PHYSICS["physics"] = args.physics
    ways: dict[str, Any] = {"dmxshm": run_dmxshm, "supersuit": run_supersuit,
                            "free": run_free}
    if args.physics == "db18":
        ways["dmxshm-bullet"] = partial(run_dmxshm, physics="bullet")
        ways["dmxshm-in-process"] = partial(run_dmxshm, in_process=True)
    rates: dict[str, list[float]] = {name: [] for name in ways}
    order = list(ways)
    for _ in range(args.rounds):
        for name in order + order[::-1]:
            rates[name].append(ways[name](args.worlds, args.robots, args.cores,
                                          args.seconds))
            print(f"  {name:17s} {rates[name][-1]:9.0f} env-steps/s", flush=True)
    med = {name: statistics.median(v) for name, v in rates.items()}
    print(f"{args.worlds} worlds x {args.robots} robots, state, {args.cores} cores "
          f"(median env-steps/s): " + ", ".join(f"{k} {v:.0f}" for k, v in med.items()))
    print(f"physics {args.physics}: dmxshm / supersuit: "
          f"{med['dmxshm'] / med['supersuit']:.2f} (target >= 1.2; DB18 >= 2); "
          f"dmxshm / free-running: {med['dmxshm'] / med['free']:.2f} (target >= 0.85)")
    if "dmxshm-bullet" in med:
        print(f"dmxshm DB18 / dmxshm Bullet: {med['dmxshm'] / med['dmxshm-bullet']:.2f} "
              "(target >= 5)")
        inp = med["dmxshm-in-process"]
        print(f"dmxshm DB18 in one process: {inp:.0f} env-steps/s on 1 core; / dmxshm Bullet "
              f"({args.cores} cores): {inp / med['dmxshm-bullet']:.2f}; / supersuit: "
              f"{inp / med['supersuit']:.2f}; / its {args.cores} workers: "
              f"{inp / med['dmxshm']:.2f}")
    parts = anatomy(args.worlds, args.robots, args.cores, args.seconds) if args.anatomy else {}
    if parts:
        print(f"a step of the batch ({parts['steps']:.0f} steps): {parts['wall_ms']:.2f} ms; "
              f"the slowest worker busy {parts['slowest_ms']:.2f} ms (mean "
              f"{parts['busy_ms']:.2f}: imbalance {parts['imbalance_ms']:.2f}), no worker "
              f"busy {parts['handoff_ms']:.2f} ms; the work spread evenly: "
              f"{parts['balanced_ms']:.2f} ms ({parts['balanced_ms'] / parts['wall_ms']:.2f} "
              "of the step)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                       "cpus": os.cpu_count(), "args": vars(args), "env_steps_s": rates,
                       "median": med, "anatomy": parts}, f, indent=1)


if __name__ == "__main__":
    main()
