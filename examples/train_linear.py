"""Train a linear lane-keeping policy on 16 DuckieLane worlds with random search.

Augmented random search (Mania et al., 2018) in a dozen lines of numpy: every
iteration, each pair of sub-environments drives the current policy nudged one
way and the other along a random direction, from the same start; the policy
moves toward the directions whose pair did better. The batch is a standard
Gymnasium VectorEnv, wrapped in RecordEpisodeStatistics.

Run: python examples/train_linear.py [iterations]
"""

import sys

import gymnasium
import numpy as np

import dmxshm
from dmxshm.batch.env import STATE_FIELDS

NOISE = 0.5  # how far each pair strays from the policy
STEP = 0.3  # how far the policy moves per iteration (in units of the returns' spread)
# Rough size of each state field (see STATE_FIELDS) in lane keeping: policy inputs near 1.
SCALE = np.array([0.1, 0.5, 0.5, 3.0, 3.0, 3.0, 10.0, 1.0, 1.0, 3.0, 1.2])


def train(iterations: int = 20, num_envs: int = 16, horizon: int = 150, seed: int = 0) -> None:
    envs = gymnasium.wrappers.vector.RecordEpisodeStatistics(
        dmxshm.make_vec(num_envs, obs="state", seed=seed))
    rng = np.random.default_rng(seed)
    pairs = num_envs // 2
    weights = np.zeros((2, len(STATE_FIELDS)))  # action = tanh(weights @ obs / scale + bias)
    bias = np.array([0.4, 0.4])  # both wheels forward: a first guess that drives
    try:
        for it in range(iterations):
            noise = rng.normal(size=(pairs, *weights.shape))
            policies = np.concatenate([weights + NOISE * noise, weights - NOISE * noise])
            starts = [seed + 1000 * it + k for k in range(pairs)] * 2  # pair k: same start
            obs, _ = envs.reset(seed=starts)
            returns = np.zeros(num_envs)
            running = np.ones(num_envs, dtype=bool)
            for _ in range(horizon):
                actions = np.tanh(np.einsum("nij,nj->ni", policies, obs / SCALE) + bias)
                obs, rewards, terminated, truncated, _ = envs.step(actions.astype(np.float32))
                returns += rewards * running  # score the first episode only
                running &= ~(terminated | truncated)
            better = returns[:pairs] - returns[pairs:]
            weights += STEP / (pairs * returns.std() + 1e-9) * np.einsum("k,kij->ij", better, noise)
            print(f"iteration {it:2d}: mean return {returns.mean():6.3f} m, "
                  f"still on the road {running.mean():4.0%}")
        print(f"{envs.episode_count} episodes ended in {iterations * horizon * num_envs} "
              f"env-steps; the last {len(envs.length_queue)} lasted "
              f"{np.mean(envs.length_queue):.0f} steps on average")
    finally:
        envs.close()


if __name__ == "__main__":
    train(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
