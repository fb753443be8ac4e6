"""The array shards' digest bytes, written into their held rows in one compiled pass
(:meth:`ArrayShard._digest <dmxshm.batch.array_shard.ArrayShard._digest>`): numpy's
slice assignments of a few bytes per env cost more than the hashing."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def hold(held: np.ndarray, idx: np.ndarray, slots: np.ndarray, tag: int,
         parts: tuple[np.ndarray, ...]) -> None:  # pragma: no cover (compiled)
    """Row ``slots[i]`` of env ``idx[i]``'s held steps (``held`` (E, H, B)): the byte
    ``tag``, then row ``i`` of each of ``parts`` (uint8 (n, width) each), in order."""
    for i in range(idx.shape[0]):
        row = held[idx[i], slots[i]]
        row[0] = tag
        at = 1
        for part in parts:
            width = part.shape[1]
            row[at:at + width] = part[i]
            at += width
