"""Train a linear lane keeper with the asynchronous API: no env waits for another.

The cross-entropy method, one candidate policy per sub-environment: each env
drives its candidate for one episode; when the episode ends, its return is
scored and the env gets a fresh candidate drawn from the current
distribution, which is refitted to the best candidates every ``num_envs``
episodes. Envs finish their episodes at different times, so ``recv()``
returns whichever ``batch_size`` envs are ready, and ``info["env_id"]`` says
which candidate each row belongs to.

Run: python examples/async_cem.py [episodes]
"""

import sys
import time

import numpy as np

import dmxshm
from dmxshm.batch.env import STATE_FIELDS

# Rough size of each state field (see STATE_FIELDS) in lane keeping: policy inputs near 1.
SCALE = np.array([0.1, 0.5, 0.5, 3.0, 3.0, 3.0, 10.0, 1.0, 1.0, 3.0, 1.2])
ELITE = 0.25  # share of the candidates the distribution is refitted to


def train(episodes: int = 480, num_envs: int = 16, horizon: int = 150, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    shape = (2, len(STATE_FIELDS) + 1)  # action = tanh(W @ [obs / scale, 1])
    mean, std = np.zeros(shape), np.full(shape, 0.5)
    mean[:, -1] = 0.4  # both wheels forward: a first guess that drives
    candidates = mean + std * rng.normal(size=(num_envs, *shape))
    returns = np.zeros(num_envs)
    scored: list[tuple[float, np.ndarray]] = []
    envs = dmxshm.make_vec(num_envs, batch_size=num_envs // 2, seed=seed,
                           max_episode_steps=horizon)
    t0, env_steps, done = time.perf_counter(), 0, 0
    try:
        envs.async_reset()
        while done < episodes:
            obs, rewards, terminated, truncated, info = envs.recv()
            ids = info["env_id"]
            env_steps += len(ids)
            returns[ids] += rewards
            for row in np.flatnonzero(terminated | truncated):
                i = ids[row]  # env i's episode ended: score its candidate, draw the next
                scored.append((returns[i], candidates[i].copy()))
                returns[i], done = 0.0, done + 1
                candidates[i] = mean + std * rng.normal(size=shape)
                if len(scored) % num_envs == 0:  # a generation: refit to the elite
                    best = sorted(scored[-num_envs:], key=lambda s: -s[0])
                    elite = np.array([c for _, c in best[:max(int(ELITE * num_envs), 2)]])
                    mean, std = elite.mean(axis=0), elite.std(axis=0) + 0.05
                    print(f"generation {len(scored) // num_envs:2d}: mean return "
                          f"{np.mean([r for r, _ in scored[-num_envs:]]):6.3f} m")
            x = np.concatenate([obs / SCALE, np.ones((len(ids), 1))], axis=1)
            actions = np.tanh(np.einsum("nij,nj->ni", candidates[ids], x))
            envs.send(actions.astype(np.float32), ids)
    finally:
        envs.close()
    print(f"{done} episodes, {env_steps} env-steps, "
          f"{env_steps / (time.perf_counter() - t0):.0f} env-steps/s")


if __name__ == "__main__":
    train(int(sys.argv[1]) if len(sys.argv) > 1 else 480)
