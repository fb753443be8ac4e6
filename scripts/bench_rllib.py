"""RLlib sampling: one EnvRunner over a dmxshm batch beside RLlib's own vectorisation.

Same environment (dmxshm/DuckieLane-v0, obs "state"), same number of envs
per EnvRunner, one EnvRunner (``SingleAgentEnvRunner``, in this process),
PPO's default RLModule on one PyTorch thread, exploring; for each
``gym_env_vectorize_mode``:

* ``vector_entry_point``: one dmxshm batch (one worker per CPU);
* ``sync``: gymnasium's ``SyncVectorEnv`` (every env in the runner's process);
* ``async``: gymnasium's ``AsyncVectorEnv`` (one process per env).

Reports ``EnvRunner.sample()`` env-steps/s and how its time splits between
the vector env's ``step`` and RLlib itself (RLModule inference, connectors,
episode bookkeeping). Needs the rllib extra: ``pip install 'dmxshm[rllib]'``.

Usage: ``python scripts/bench_rllib.py [--num-envs 16] [--steps 8192] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

import dmxshm.rllib

MODES = ("vector_entry_point", "sync", "async")


def runner(mode: str, n: int) -> SingleAgentEnvRunner:
    config = (PPOConfig()
              .environment(dmxshm.rllib.ENV_ID, env_config={"max_episode_steps": 1000})
              .env_runners(num_env_runners=0, num_envs_per_env_runner=n,
                           gym_env_vectorize_mode=mode))
    return SingleAgentEnvRunner(config=config)


def measure(mode: str, n: int, steps: int) -> dict[str, Any]:
    env_runner = runner(mode, n)
    try:
        env = env_runner.env
        spent = [0.0]
        step = env.step

        def timed_step(actions: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return step(actions)
            finally:
                spent[0] += time.perf_counter() - t0

        env.step = timed_step  # type: ignore[method-assign]
        env_runner.sample(num_timesteps=max(n * 20, 256), random_actions=False)  # warm-up
        spent[0] = 0.0
        t0 = time.perf_counter()
        got = 0
        while got < steps:
            episodes = env_runner.sample(num_timesteps=min(steps - got, 1024))
            got += sum(len(e) for e in episodes)
        seconds = time.perf_counter() - t0
        return {"mode": mode, "num_envs": n, "env_steps_per_s": got / seconds,
                "env_step_share": spent[0] / seconds, "rllib_share": 1 - spent[0] / seconds}
    finally:
        env_runner.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=8192, help="env-steps timed per mode")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    dmxshm.rllib.register()
    print(f"{args.num_envs} envs per EnvRunner, obs state, {os.cpu_count()} cores, "
          f"{args.steps} timed env-steps, torch threads 1")
    print(f"{'vectorize mode':<20} {'env-steps/s':>12} {'in env.step':>12} {'in RLlib':>9}")
    rows = []
    for mode in MODES:
        row = measure(mode, args.num_envs, args.steps)
        rows.append(row)
        print(f"{mode:<20} {row['env_steps_per_s']:>12.0f} {row['env_step_share']:>11.0%} "
              f"{row['rllib_share']:>9.0%}")
    by = {r["mode"]: r["env_steps_per_s"] for r in rows}
    print(f"dmxshm (vector_entry_point) / sync {by['vector_entry_point'] / by['sync']:.2f}, "
          f"/ async {by['vector_entry_point'] / by['async']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
