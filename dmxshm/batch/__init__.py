"""Batch mode: many DuckieLane worlds stepped at once, for learning.

* :mod:`~dmxshm.batch.env`, :mod:`~dmxshm.batch.env_v1`: ``dmxshm/DuckieLane-v0`` and
  ``-v1``, one world in the calling process.
* :mod:`~dmxshm.batch.vector`: :class:`DmxVectorEnv` and :func:`make_vec`, a
  Gymnasium ``VectorEnv`` sharded over worker processes (or in-process,
  :mod:`~dmxshm.batch.serial`), one shared-memory handoff per worker per step.

Below it, one concern per module: :mod:`~dmxshm.batch.options` (the arguments checked),
:mod:`~dmxshm.batch.kinds` (the envs a batch holds), :mod:`~dmxshm.batch.shard` (the
worlds of a worker, stepped and written: one autoreset), :mod:`~dmxshm.batch.worker`
(the shared arrays and a worker's loop), :mod:`~dmxshm.batch.completions`
(asynchronous sends coming back), :mod:`~dmxshm.batch.readout` (rows and infos read
out), :mod:`~dmxshm.batch.seeds` (reset masks and seeds), :mod:`~dmxshm.batch.processes`
(the worker processes started, watched and stopped), :mod:`~dmxshm.batch.breakdown` and
:mod:`~dmxshm.batch.sampling` (where a step goes; profiling).
"""
