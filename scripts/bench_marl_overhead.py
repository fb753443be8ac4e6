"""What the PettingZoo ParallelEnv costs over the world step it wraps (issue 31, item 1).

One process, R robots (default 4) in one world, state observations, the same duties:
three ways of stepping, measured in turn, ABBA, ``rounds`` times, each for ``steps``
steps, CPU time of this process (``time.process_time``: the machine's other work does
not count):

- ``parallel``: ``dmxshm.parallel_env(robots=R).step(dict of actions)``;
- ``core``: ``MultiLane.step(array of actions)``, the world step it wraps (physics,
  sensing with noise, lanes, rewards, collisions): the reference of the issue's
  "overhead <= 15%";
- ``physics``: the bare ``World.step`` with the motors (no sensing, no rewards), for
  scale.

Every way restarts from the same reset (seed 0) each ``episode`` steps (and the first
two when every robot ended), so each runs the same simulation. Prints a table and,
with ``--json FILE``, writes the raw figures.

    python scripts/bench_marl_overhead.py --robots 4 --rounds 6 --json marl-overhead.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import datetime, timezone

import numpy as np

import dmxshm


def _ways(robots: int, episode: int):
    env = dmxshm.parallel_env(robots=robots, map="loop", max_episode_steps=0)
    core = env.core
    rng = np.random.default_rng(0)
    duties = rng.uniform(0.15, 0.3, (episode, robots, 2)).astype(np.float32)
    names = env.possible_agents

    def parallel(steps: int) -> None:
        for k in range(steps):
            if k % episode == 0 or not env.agents:
                env.reset(seed=0)
            d = duties[k % episode]
            env.step({a: d[i] for i, a in enumerate(names) if a in env.agents})

    def bare_core(steps: int) -> None:
        for k in range(steps):
            if k % episode == 0 or core.done:
                core.reset(seed=0)
            core.step(duties[k % episode])

    def physics(steps: int) -> None:
        world, motors = core.world, core._motors
        for k in range(steps):
            if k % episode == 0:
                core.reset(seed=0)
            world.apply_wheel_speeds(motors.step(duties[k % episode].astype(np.float64)))
            world.step()

    return env, {"parallel": parallel, "core": bare_core, "physics": physics}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", type=int, default=4)
    parser.add_argument("--steps", type=int, default=1500, help="steps per measurement")
    parser.add_argument("--episode", type=int, default=300, help="steps between resets")
    parser.add_argument("--rounds", type=int, default=6, help="ABBA rounds")
    parser.add_argument("--json", help="write the raw figures here")
    args = parser.parse_args()
    env, ways = _ways(args.robots, args.episode)
    per_step: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for fn in ways.values():  # warm up
            fn(args.episode)
        order = list(ways)
        for r in range(args.rounds):
            for name in order if r % 2 == 0 else order[::-1]:
                t0 = time.process_time()
                ways[name](args.steps)
                per_step[name].append((time.process_time() - t0) / args.steps * 1e6)
    finally:
        env.close()
    med = {name: statistics.median(v) for name, v in per_step.items()}
    print(f"{args.robots} robots in one world, state observations; CPU us per step "
          f"(median of {args.rounds} x {args.steps} steps)")
    for name, v in per_step.items():
        print(f"  {name:9s} {med[name]:8.1f}   runs: {', '.join(f'{x:.1f}' for x in v)}")
    overhead = med["parallel"] / med["core"] - 1
    print(f"ParallelEnv over the world step (MultiLane.step): {overhead:+.1%} "
          f"(target <= +15%)")
    print(f"ParallelEnv over bare physics (World.step, no sensing): "
          f"{med['parallel'] / med['physics'] - 1:+.1%}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                       "cpus": os.cpu_count(), "args": vars(args),
                       "us_per_step": per_step, "median_us": med,
                       "overhead_vs_core": overhead}, f, indent=1)


if __name__ == "__main__":
    main()
