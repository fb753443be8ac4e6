"""Batch mode: many DuckieLane worlds stepped at once, for learning.

* :mod:`~dmxshm.batch.env`: ``dmxshm/DuckieLane-v0``, one world in the calling process.
* :mod:`~dmxshm.batch.vector`: :class:`DmxVectorEnv` and :func:`make_vec`, a
  Gymnasium ``VectorEnv`` sharded over worker processes, one shared-memory
  handoff per worker per step.
"""
