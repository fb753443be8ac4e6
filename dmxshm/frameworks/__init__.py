"""dmxshm under the learning frameworks: :mod:`~dmxshm.frameworks.sb3`
(Stable-Baselines3's ``VecEnv`` over a batch, the ``sb3`` extra) and
:mod:`~dmxshm.frameworks.rllib` (RLlib's env creators, the ``rllib`` extra).

Both are importable by their older paths too, ``dmxshm.sb3`` and ``dmxshm.rllib``
(the same module objects). Gymnasium's ``VectorEnv`` (:func:`dmxshm.make_vec`) and
PettingZoo's ``ParallelEnv`` (:func:`dmxshm.parallel_env`) need no adapter."""
