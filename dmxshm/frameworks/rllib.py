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

Multi-agent: :func:`register_multi_agent` registers ``"dmxshm/DuckieMulti-v0"``, an
RLlib ``MultiAgentEnv`` (:class:`DuckieMultiAgentEnv`) over one
``dmxshm.parallel_env`` world, its ``env_config`` the ParallelEnv's keyword arguments
(``robots``, ``map``, ``max_episode_steps``...); RLlib's own EnvRunners step
``num_envs_per_env_runner`` such worlds each, in the runner's process (no dmxshm
workers)::

    dmxshm.rllib.register_multi_agent()
    config = (PPOConfig()
              .environment("dmxshm/DuckieMulti-v0",
                           env_config={"robots": 4, "max_episode_steps": 500})
              .multi_agent(policies={"shared"},          # parameter sharing
                           policy_mapping_fn=lambda agent_id, episode, **kw: "shared"))

The agents are ``duckiebot0`` ... ``duckiebot{R-1}``; a robot whose episode ended
leaves ``agents`` (its last step reports it) and gets no observation until the world
resets; the world's episode ends (``"__all__"``) when every robot's has,
``truncateds["__all__"]`` when ``max_episode_steps`` cut it, else
``terminateds["__all__"]``. (RLlib's ``ParallelPettingZooEnv`` wrapper sets
``"__all__"`` only when every robot ending in that step ended the same way, so a world
whose last robots left the road as the others were truncated would be stepped again.)
"""

from __future__ import annotations

import functools
from typing import Any

from dmxshm.batch.env import DuckieLaneEnv
from dmxshm.batch.vector import DmxVectorEnv, make_vec
from dmxshm.proc.cpus import usable_cpus

ENV_ID = "dmxshm/DuckieLane-v0"
MULTI_ENV_ID = "dmxshm/DuckieMulti-v0"
NEEDS_RAY = "dmxshm.rllib needs Ray's RLlib: pip install 'dmxshm[rllib]'"


def register(env_id: str = ENV_ID) -> None:
    """Register :func:`env_creator` with RLlib (Ray's ``register_env``) as ``env_id``.

    Call it on the driver, before the algorithm is built; Ray must be
    importable (``pip install 'dmxshm[rllib]'``).
    """
    _register_env(env_id, env_creator)


def register_multi_agent(env_id: str = MULTI_ENV_ID) -> None:
    """Register :func:`multi_agent_env_creator` with RLlib as ``env_id``: a
    :class:`DuckieMultiAgentEnv` per env, its ``env_config`` ``dmxshm.parallel_env``'s
    keyword arguments.

    Call it on the driver, before the algorithm is built; Ray must be importable.
    """
    _register_env(env_id, multi_agent_env_creator)


def _register_env(env_id: str, creator: Any) -> None:
    try:
        from ray.tune.registry import register_env
    except ImportError as exc:
        raise ImportError(NEEDS_RAY) from exc
    register_env(env_id, creator)


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


def multi_agent_env_creator(env_config: dict[str, Any]) -> Any:
    """What RLlib calls to make a multi-agent env: a :class:`DuckieMultiAgentEnv` of one
    world, ``env_config`` being ``dmxshm.parallel_env``'s keyword arguments."""
    return multi_agent_env_class()(env_config)


@functools.cache
def multi_agent_env_class() -> type:
    """:class:`DuckieMultiAgentEnv`, made on first use: it subclasses Ray's
    ``MultiAgentEnv``, and ``import dmxshm.rllib`` imports no Ray.

    Raises:
        ImportError: Ray's RLlib is not installed.
    """
    try:
        import gymnasium as gym
        from ray.rllib.env.multi_agent_env import MultiAgentEnv
    except ImportError as exc:
        raise ImportError(NEEDS_RAY) from exc

    from dmxshm.marl import parallel_env

    base: Any = MultiAgentEnv  # Ray's types (Hashable agent ids) are not checked here

    class DuckieMultiAgentEnv(base):
        """RLlib's ``MultiAgentEnv`` over one ``dmxshm.parallel_env`` world (see the
        module docstring); ``self.par_env`` is the ParallelEnv.

        Args:
            config: ``dmxshm.parallel_env``'s keyword arguments (RLlib's ``env_config``).
        """

        def __init__(self, config: dict[str, Any] | None = None) -> None:
            super().__init__()
            # RLlib's EnvContext: a dict with attributes; the keys only
            self.par_env = parallel_env(**dict(config or {}))
            par = self.par_env
            self.possible_agents = list(par.possible_agents)
            self.agents: list[str] = []
            self.observation_spaces = {a: par.observation_space(a)
                                       for a in self.possible_agents}
            self.action_spaces = {a: par.action_space(a) for a in self.possible_agents}
            self.observation_space = gym.spaces.Dict(self.observation_spaces)
            self.action_space = gym.spaces.Dict(self.action_spaces)
            self.render_mode = par.render_mode
            self.metadata = par.metadata

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
            obs, infos = self.par_env.reset(seed=seed, options=options)
            self.agents = list(self.par_env.agents)
            return obs, infos

        def step(self, action_dict: dict[str, Any]) -> tuple[dict[str, Any], ...]:
            obs, rewards, terminateds, truncateds, infos = self.par_env.step(action_dict)
            self.agents = list(self.par_env.agents)
            over = not self.agents
            cut = over and any(truncateds.values())  # max_episode_steps ended the world
            terminateds["__all__"] = over and not cut
            truncateds["__all__"] = cut
            return obs, rewards, terminateds, truncateds, infos

        def render(self) -> Any:
            return self.par_env.render()

        def close(self) -> None:
            self.par_env.close()

    # found by pickle as dmxshm.rllib.DuckieMultiAgentEnv (the module's __getattr__)
    DuckieMultiAgentEnv.__module__ = __name__
    DuckieMultiAgentEnv.__qualname__ = "DuckieMultiAgentEnv"
    return DuckieMultiAgentEnv


def __getattr__(name: str) -> Any:
    if name == "DuckieMultiAgentEnv":
        return multi_agent_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


# DuckieMultiAgentEnv (made on first use, with Ray) is left out: import * without Ray works
__all__ = ["ENV_ID", "MULTI_ENV_ID", "allotted_cpus", "env_creator", "multi_agent_env_class",
           "multi_agent_env_creator", "register", "register_multi_agent"]
