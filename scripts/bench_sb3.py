"""Stable-Baselines3 PPO end to end: dmxshm's VecEnv beside SB3's own, in one run.

Same environment (dmxshm/DuckieLane-v0, obs "state"), same number of envs,
same PPO settings and seed, for each VecEnv:

* ``dmxshm``: :func:`dmxshm.sb3.make_vec_env` (one worker per core);
* ``subproc``: SB3's ``SubprocVecEnv`` (one process per env, pipes);
* ``dummy``: SB3's ``DummyVecEnv`` (every env in this process).

Two figures each: env-steps/s of the VecEnv alone (random actions, no
learning), and env-steps/s of ``PPO.learn`` end to end (rollouts plus
gradient steps), with the share of the learn time spent collecting
rollouts. PPO runs twice: with PyTorch's default threads (one per core) and
with one (``torch.set_num_threads(1)``): PyTorch's OpenMP threads spin after
each parallel region and take cores from the env workers. Needs the sb3
extra: ``pip install 'dmxshm[sb3]'``.

Usage: ``python scripts/bench_sb3.py [--num-envs 16] [--steps 16384] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from dmxshm.batch.env import DuckieLaneEnv
from dmxshm.sb3 import make_vec_env


def lane_env() -> DuckieLaneEnv:  # module level: SubprocVecEnv pickles it
    return DuckieLaneEnv()


def make(kind: str, n: int) -> Any:
    if kind == "dmxshm":
        return make_vec_env(n, seed=0)
    venv = (SubprocVecEnv if kind == "subproc" else DummyVecEnv)([lane_env] * n)
    venv.seed(0)
    return venv


class RolloutTimer(BaseCallback):
    """Seconds PPO spends collecting rollouts (the rest of learn is gradient steps)."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds, self._t0 = 0.0, 0.0

    def _on_rollout_start(self) -> None:
        self._t0 = time.perf_counter()

    def _on_rollout_end(self) -> None:
        self.seconds += time.perf_counter() - self._t0

    def _on_step(self) -> bool:
        return True


def vec_rate(venv: Any, n: int, seconds: float) -> float:
    """env-steps/s of random actions, after a warm-up."""
    rng = np.random.default_rng(0)
    venv.reset()
    for _ in range(20):
        venv.step(rng.uniform(-1, 1, (n, 2)).astype(np.float32))
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        venv.step(rng.uniform(-1, 1, (n, 2)).astype(np.float32))
        steps += n
    return steps / (time.perf_counter() - t0)


def learn_rate(venv: Any, n: int, steps: int) -> tuple[float, float]:
    """env-steps/s of PPO.learn, and the share of it spent in rollouts."""
    model = PPO("MlpPolicy", venv, n_steps=max(2048 // n, 16), batch_size=256, n_epochs=4,
                seed=0, device="cpu", verbose=0)
    model.learn(total_timesteps=n * model.n_steps)  # warm-up: one rollout and its update
    timer = RolloutTimer()
    t0 = time.perf_counter()
    model.learn(total_timesteps=steps, callback=timer, reset_num_timesteps=False)
    seconds = time.perf_counter() - t0
    return steps / seconds, timer.seconds / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=16384, help="PPO env-steps timed")
    parser.add_argument("--seconds", type=float, default=4.0, help="VecEnv-alone time")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args()
    n, rows = args.num_envs, []
    print(f"{n} envs, obs state, {os.cpu_count()} cores; PPO n_steps {max(2048 // n, 16)}, "
          f"batch 256, 4 epochs, {args.steps} timed env-steps")
    print(f"{'vecenv':<8} {'alone env-steps/s':>18} {'torch threads':>14} "
          f"{'PPO env-steps/s':>16} {'in rollouts':>12}")
    threads = sorted({torch.get_num_threads(), 1}, reverse=True)
    for kind in ("dmxshm", "subproc", "dummy"):
        venv = make(kind, n)
        try:
            alone = vec_rate(venv, n, args.seconds)
            for t in threads:
                torch.set_num_threads(t)
                learn, rollout_share = learn_rate(venv, n, args.steps)
                rows.append({"vecenv": kind, "num_envs": n, "alone_env_steps_per_s": alone,
                             "torch_threads": t, "ppo_env_steps_per_s": learn,
                             "rollout_share": rollout_share})
                print(f"{kind:<8} {alone:>18.0f} {t:>14} {learn:>16.0f} {rollout_share:>11.0%}")
        finally:
            venv.close()
    for t in threads:
        by = {r["vecenv"]: r for r in rows if r["torch_threads"] == t}
        for key, what in (("alone_env_steps_per_s", "VecEnv alone"),
                          ("ppo_env_steps_per_s", f"PPO, {t} torch thread(s)")):
            if what == "VecEnv alone" and t != threads[0]:
                continue
            print(f"{what}: dmxshm / SubprocVecEnv "
                  f"{by['dmxshm'][key] / by['subproc'][key]:.2f}, "
                  f"dmxshm / DummyVecEnv {by['dmxshm'][key] / by['dummy'][key]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
