"""Many robots, many learners: dmxshm's multi-agent environments.

* :class:`~dmxshm.marl.lanes.MultiLane`: the core, many robots in one world, each as
  ``DuckieLane-v1``'s robot, colliding with each other and with objects;
* :func:`parallel_env`: a PettingZoo ``ParallelEnv`` over one such world
  (:class:`~dmxshm.marl.parallel.DuckieParallelEnv`);
* ``dmxshm.make_vec(num_envs, robots_per_world=R)``: a Gymnasium ``VectorEnv`` whose
  rows are the robots of ``num_envs / R`` worlds, for parameter sharing.
"""

from __future__ import annotations

from typing import Any


def parallel_env(robots: int = 4, **kwargs: Any) -> Any:
    """A PettingZoo ``ParallelEnv`` of ``robots`` robots in one world
    (:class:`~dmxshm.marl.parallel.DuckieParallelEnv`; keyword arguments are
    :class:`~dmxshm.marl.lanes.MultiLane`'s, and ``render_mode`` and ``state``)."""
    from dmxshm.marl.parallel import DuckieParallelEnv

    return DuckieParallelEnv(robots=robots, **kwargs)


__all__ = ["parallel_env"]
