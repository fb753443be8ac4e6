"""The in-process batch: ``make_vec(..., num_workers=0)`` steps its envs in the caller.

As PufferLib's ``Serial`` backend, the in-process backend *is* the worker body, not a
second implementation: the caller holds the one shard of the batch
(:func:`~dmxshm.batch.worker.open_shard`, every env of the batch) over the same arrays
a worker would share, and where the parent would post a worker's ``go`` semaphore it
runs :meth:`~dmxshm.batch.worker.Shard.serve`, the body of a worker's loop, at once.
The parent's code above that post is the same for both backends, so the rows are the
workers' bit for bit, in every autoreset mode and through ``send``/``recv``.

What differs: the arrays live in the caller's memory, not in ``/dev/shm``; no process
starts (a batch is made in the time its envs take to build); an env that raises
raises its own error in the caller (a worker's becomes a
:class:`~dmxshm.batch.vector.WorkerError`); ``send`` returns once its envs stepped,
so ``recv`` never waits.
"""

from __future__ import annotations

import time

import numpy as np

from dmxshm.batch.worker import Shard


class Memory:
    """The batch's arrays in the caller's memory: what :class:`~dmxshm.batch.worker.Arrays`
    asks of a :class:`~dmxshm.shm.segment.Segment`."""

    def __init__(self, size_bytes: int) -> None:
        self.buf = np.zeros(max(size_bytes, 1), np.uint8)  # numpy's allocation: aligned

    def ndarray(self, dtype: np.dtype, shape: tuple[int, ...], offset: int = 0) -> np.ndarray:
        """A numpy view of part of the memory (no copy)."""
        return np.ndarray(shape, dtype=dtype, buffer=self.buf.data, offset=offset)


class Serial:
    """The in-process shard's ``go``: posting it carries the command out at once."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard

    def release(self) -> None:
        """Run the worker body for the command the parent just wrote."""
        self.shard.serve(time.perf_counter())
