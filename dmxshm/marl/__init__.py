"""Many robots, many learners: dmxshm's multi-agent environments.

* :class:`~dmxshm.batch.lanes.MultiLane` (the batch's, as a worker's world of R
  robots; importable as ``dmxshm.marl.lanes.MultiLane`` too): the core, many robots in
  one world, each as ``DuckieLane-v1``'s robot, colliding with each other and with
  objects;
* :func:`parallel_env`: a PettingZoo ``ParallelEnv`` over one such world
  (:class:`~dmxshm.marl.parallel.DuckieParallelEnv`);
* ``dmxshm.make_vec(num_envs, robots_per_world=R)``: a Gymnasium ``VectorEnv`` whose
  rows are the robots of ``num_envs / R`` worlds, for parameter sharing;
* :func:`connect_parallel`: a ``ParallelEnv`` over the robots of a running gym network's
  agent slots (:class:`~dmxshm.marl.network_env.NetworkParallelEnv`).
"""

from __future__ import annotations

from typing import Any


def parallel_env(robots: int = 4, **kwargs: Any) -> Any:
    """A PettingZoo ``ParallelEnv`` of ``robots`` robots in one world
    (:class:`~dmxshm.marl.parallel.DuckieParallelEnv`; keyword arguments are
    :class:`~dmxshm.batch.lanes.MultiLane`'s, and ``render_mode`` and ``state``)."""
    from dmxshm.marl.parallel import DuckieParallelEnv

    return DuckieParallelEnv(robots=robots, **kwargs)


def connect_parallel(name: str | None = None, **kwargs: Any) -> Any:
    """A PettingZoo ``ParallelEnv`` over the free agent slots of a running gym network
    started with ``--external-agents N --episodes``
    (:func:`dmxshm.marl.network_env.connect_parallel`)."""
    from dmxshm.marl.network_env import connect_parallel as connect

    return connect(name, **kwargs)


__all__ = ["connect_parallel", "parallel_env"]
