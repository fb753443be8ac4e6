"""RLlib on Ray: one dmxshm batch per EnvRunner (the ``rllib`` extra).

``pip install 'dmxshm[rllib]'``, then, on the driver, before building the
algorithm::

    import dmxshm.rllib
    from ray.rllib.algorithms.ppo import PPOConfig

    dmxshm.rllib.register()                       # "dmxshm/DuckieLane-v0", everywhere
    config = (PPOConfig()
              .environment("dmxshm/DuckieLane-v0", env_config={"max_episode_steps": 500})
              .env_runners(num_env_runners=2, num_envs_per_env_runner=16,
                           num_cpus_per_env_runner=4,
                           gym_env_vectorize_mode="vector_entry_point"))
    algo = config.build_algo()

:func:`register` puts :func:`env_creator` in RLlib's registry under the
bare id. That registry lives in the Ray cluster, so every EnvRunner on every
node finds the id without importing dmxshm first (the bare id alone fails
there: gymnasium knows the ``dmxshm`` namespace only in processes that
imported dmxshm). With ``gym_env_vectorize_mode="vector_entry_point"``
each EnvRunner's ``num_envs_per_env_runner`` worlds are one dmxshm batch.

Worker processes per batch: ``env_config["num_workers"]``, by default the
CPUs Ray gave the EnvRunner (``num_cpus_per_env_runner``, default 1), and
never more than the CPUs the process may run on: a batch never starts more
workers than its runner was given cores.
"""

from __future__ import annotations

from typing import Any

from dmxshm.batch.env import DuckieLaneEnv
from dmxshm.batch.vector import DmxVectorEnv, make_vec
from dmxshm.proc.cpus import usable_cpus

ENV_ID = "dmxshm/DuckieLane-v0"


def register(env_id: str = ENV_ID) -> None:
    """Register :func:`env_creator` with RLlib (Ray's ``register_env``) as ``env_id``.

    Call it on the driver, before the algorithm is built; Ray must be
    importable (``pip install 'dmxshm[rllib]'``).
    """
    try:
        from ray.tune.registry import register_env
    except ImportError as exc:
        raise ImportError("dmxshm.rllib needs Ray's RLlib: pip install 'dmxshm[rllib]'") from exc
    register_env(env_id, env_creator)


def env_creator(env_config: dict[str, Any]) -> DuckieLaneEnv | DmxVectorEnv:
    """What RLlib calls to make an env: with ``num_envs`` in ``env_config`` (RLlib adds
    it in ``vector_entry_point`` mode), one batch of that many worlds; without, one
    world. The other keys are :func:`dmxshm.make_vec`'s (``obs``, ``camera``,
    ``max_episode_steps``, ``num_workers``, ``autoreset_mode``...)."""
    config = dict(env_config)  # RLlib's EnvContext: a dict with attributes; the keys only
    num_envs = config.pop("num_envs", None)
    if num_envs is None:
        config.pop("num_workers", None)
        return DuckieLaneEnv(**config)
    workers = config.pop("num_workers", None) or allotted_cpus()
    return make_vec(int(num_envs), workers, **config)


def allotted_cpus() -> int:
    """CPUs this process may use: its affinity, and, inside a Ray worker, no more
    than the CPUs Ray assigned to it."""
    cpus = len(usable_cpus())
    try:
        import ray

        if ray.is_initialized():
            assigned = ray.get_runtime_context().get_assigned_resources().get("CPU")
            if assigned:
                cpus = min(cpus, max(1, int(assigned)))
    except Exception:  # noqa: BLE001  outside Ray, or an older Ray: the affinity stands
        pass
    return cpus


__all__ = ["ENV_ID", "allotted_cpus", "env_creator", "register"]
