"""PPO with parameter sharing over the multi-agent batch: issue 31's figure, in one run.

"PPO with parameter sharing (SB3, item 2, 16 x 4, seed 0): after 200k env-steps the mean
return of the last 20 episodes is at least halfway from a random policy's to the built-in
lane follower's."

- **ppo**: SB3's PPO (``MlpPolicy``, seed 0) trains on
  ``dmxshm.sb3.make_vec_env(64, robots_per_world=4, seed=0)`` (16 worlds x 4 robots, one
  policy for every robot, state observations, MultiLane's grid map with routes) for
  ``--steps`` env-steps (rows stepped, stopped rows included), through ``VecMonitor``
  (with ``--normalize``, ``VecNormalize`` over it, observations and rewards; the
  returns are still VecMonitor's, the env's own rewards: on 2026-12-03 it made no
  difference to the figure, 0.626 with it, 0.641 without, so it is off by default).
  Figure: the mean return of the last 20 episodes VecMonitor saw end.
- **random**: duties drawn uniformly in [-1, 1] for every robot at every step.
- **follower**: the built-in lane follower (:class:`dmxshm.policies.LaneFollow`: PD on
  the lane offset and heading error, slowing behind an obstacle by the time-of-flight
  range) on v1's state vector, its wheel speeds sent as duties through Duckietown's
  kinematics (:meth:`dmxshm.world.motor.MotorModel.duty`, the nominal robot), as a
  network's PWM robot would send them.

The baselines (and ``ppo_eval``, the trained policy acting deterministically, an extra
figure) run on the same worlds as the training's first episodes (same seed, same
episode settings): every robot's first episode, 64 episodes each (a robot that ended
waits, stopped, for its world's end).

Ratio: ``(ppo - random) / (follower - random)``; the target is >= 0.5.

    python scripts/ppo_marl.py --json ppo-marl.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import gymnasium
import numpy as np
import stable_baselines3
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize

import dmxshm
from dmxshm.batch.env_v1 import STATE_FIELDS_V1
from dmxshm.policies import LaneFollow
from dmxshm.sb3 import make_vec_env
from dmxshm.world.motor import DUCKIEBOT

TARGET = 0.5
LAST_EPISODES = 20
Policy = Callable[[np.ndarray], np.ndarray]


class V1LaneFollow:
    """The built-in lane follower on v1's state rows, answering duties."""

    OFFSET, HEADING, TOF = (STATE_FIELDS_V1.index(k)
                            for k in ("lane_offset_m", "heading_err_rad", "tof_m"))

    def __init__(self, rows: int) -> None:
        self.follow = LaneFollow(tuple(range(rows)))
        self.obs = np.zeros(rows, [("tof_m", "<f4"), ("lane", "<f4", (3,))])

    def __call__(self, state: np.ndarray) -> np.ndarray:
        self.obs["lane"][:, 0] = state[:, self.OFFSET]
        self.obs["lane"][:, 1] = state[:, self.HEADING]
        self.obs["tof_m"] = state[:, self.TOF]
        return DUCKIEBOT.duty(self.follow(self.obs)).astype(np.float32)


def first_episodes(venv: VecEnv, policy: Policy, seed: int) -> list[float]:
    """Every row's first episode's return under ``policy`` (one row per robot), the
    worlds seeded as the training's."""
    venv.seed(seed)
    obs = venv.reset()
    n = venv.num_envs
    returns, ended = np.zeros(n), np.zeros(n, bool)
    while not ended.all():
        obs, rewards, dones, _ = venv.step(policy(obs))
        returns += np.where(ended, 0.0, rewards)
        ended |= dones
    return returns.tolist()


class Curve(BaseCallback):
    """The mean return of the last 20 episodes after each rollout."""

    def __init__(self) -> None:
        super().__init__()
        self.points: list[tuple[int, float]] = []

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        last = [e["r"] for e in self.model.ep_info_buffer][-LAST_EPISODES:]
        if len(last) == LAST_EPISODES:
            self.points.append((self.num_timesteps, float(np.mean(last))))
            if len(self.points) % 5 == 0:
                print(f"  {self.num_timesteps:7d} env-steps: last {LAST_EPISODES} episodes "
                      f"{self.points[-1][1]:+.3f}", flush=True)


def run(*, worlds: int = 16, robots: int = 4, steps: int = 200_000, seed: int = 0,
        workers: int | None = None, max_episode_steps: int = 1000, normalize: bool = False,
        n_steps: int = 125, batch_size: int = 1000, n_epochs: int = 10,
        learning_rate: float = 3e-4, gamma: float = 0.99, gae_lambda: float = 0.95,
        ent_coef: float = 0.0, torch_threads: int = 1) -> dict[str, Any]:
    """Train, evaluate the baselines, and return every figure (see the module docstring)."""
    torch.set_num_threads(torch_threads)
    rows = worlds * robots
    env_kwargs = {"robots_per_world": robots, "num_workers": workers,
                  "max_episode_steps": max_episode_steps}

    def make() -> VecEnv:
        return make_vec_env(rows, seed=seed, **env_kwargs)

    baselines: dict[str, list[float]] = {}
    venv = make()
    try:
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        baselines["random"] = first_episodes(
            venv, lambda obs: rng.uniform(-1, 1, (rows, 2)).astype(np.float32), seed)
        baselines["follower"] = first_episodes(venv, V1LaneFollow(rows), seed)
        baseline_s = time.perf_counter() - t0
    finally:
        venv.close()

    monitor = VecMonitor(make())
    train: VecEnv = VecNormalize(monitor, gamma=gamma) if normalize else monitor
    curve = Curve()
    try:
        model = PPO("MlpPolicy", train, n_steps=n_steps, batch_size=batch_size,
                    n_epochs=n_epochs, learning_rate=learning_rate, gamma=gamma,
                    gae_lambda=gae_lambda, ent_coef=ent_coef, seed=seed, device="cpu",
                    verbose=0)
        t0 = time.perf_counter()
        model.learn(total_timesteps=steps, callback=curve)
        train_s = time.perf_counter() - t0
        episodes = [float(e["r"]) for e in model.ep_info_buffer]
        ppo = float(np.mean(episodes[-LAST_EPISODES:]))
        if normalize:
            assert isinstance(train, VecNormalize)
            train.training = False  # the statistics it learnt, frozen

        def act(obs: np.ndarray) -> np.ndarray:
            seen = train.normalize_obs(obs) if isinstance(train, VecNormalize) else obs
            return model.predict(seen, deterministic=True)[0]
        ppo_eval = first_episodes(monitor.venv, act, seed)
        timesteps = int(model.num_timesteps)
    finally:
        train.close()

    random_mean = float(np.mean(baselines["random"]))
    follower_mean = float(np.mean(baselines["follower"]))
    ratio = (ppo - random_mean) / (follower_mean - random_mean)
    return {"ppo": ppo, "random": random_mean, "follower": follower_mean, "ratio": ratio,
            "met": bool(ratio >= TARGET), "target": TARGET,
            "ppo_eval": float(np.mean(ppo_eval)), "ppo_last_episodes": episodes[-LAST_EPISODES:],
            "episodes": {"random": len(baselines["random"]),
                         "follower": len(baselines["follower"]), "ppo_eval": len(ppo_eval)},
            "returns": {**baselines, "ppo_eval": ppo_eval}, "env_steps": timesteps,
            "curve": curve.points, "train_s": train_s, "baseline_s": baseline_s,
            "settings": {"worlds": worlds, "robots": robots, "steps": steps, "seed": seed,
                         "workers": workers, "max_episode_steps": max_episode_steps,
                         "normalize": normalize, "n_steps": n_steps,
                         "batch_size": batch_size, "n_epochs": n_epochs,
                         "learning_rate": learning_rate, "gamma": gamma,
                         "gae_lambda": gae_lambda, "ent_coef": ent_coef,
                         "torch_threads": torch_threads}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=int, default=16)
    parser.add_argument("--robots", type=int, default=4)
    parser.add_argument("--steps", type=int, default=200_000, help="env-steps (rows)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None,
                        help="batch workers (default: one per usable CPU)")
    parser.add_argument("--max-episode-steps", type=int, default=1000)
    parser.add_argument("--normalize", action="store_true",
                        help="VecNormalize over VecMonitor (observations and rewards)")
    parser.add_argument("--n-steps", type=int, default=125, help="per row, per rollout")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--n-epochs", type=int, default=10)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument("--ent-coef", type=float, default=0.0)
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="PyTorch's threads (its spinning threads take cores from "
                             "the batch's workers)")
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args()
    options = {k: v for k, v in vars(args).items() if k != "json"}
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    out = run(**options)
    print(f"{args.worlds} worlds x {args.robots} robots, seed {args.seed}, "
          f"{out['env_steps']} env-steps, episodes of {args.max_episode_steps} steps, "
          f"VecNormalize {'on' if args.normalize else 'off'}; train {out['train_s']:.0f} s")
    print(f"  ppo       {out['ppo']:+.3f}  (mean return of the last {LAST_EPISODES} "
          f"training episodes)")
    print(f"  random    {out['random']:+.3f}  ({out['episodes']['random']} episodes)")
    print(f"  follower  {out['follower']:+.3f}  ({out['episodes']['follower']} episodes)")
    print(f"  ppo_eval  {out['ppo_eval']:+.3f}  (trained policy, deterministic, "
          f"{out['episodes']['ppo_eval']} episodes; extra)")
    print(f"(ppo - random) / (follower - random) = {out['ratio']:.3f}: "
          f"{'>=' if out['met'] else '<'} {TARGET} ({'met' if out['met'] else 'not met'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": started, "command": " ".join(["python", *sys.argv]),
                       "versions": {"python": platform.python_version(),
                                    "dmxshm": dmxshm.__version__,
                                    "stable_baselines3": stable_baselines3.__version__,
                                    "torch": torch.__version__,
                                    "gymnasium": gymnasium.__version__,
                                    "numpy": np.__version__},
                       "seeds": {"ppo": args.seed, "worlds": [args.seed + w * args.robots
                                                              for w in range(args.worlds)],
                                 "random_policy": args.seed},
                       **out}, f, indent=1)


if __name__ == "__main__":
    main()
