"""The array shards' held digest bytes (:meth:`ArrayShard._digest
<dmxshm.batch.array_shard.ArrayShard._digest>`): each step's bytes of every env of a
shard written into one contiguous slot of a ring, and hashed into each env's digest a
block of steps at a time.

The ring is slot-major (a step's rows of all envs side by side) so that a step's bytes
are written with a few numpy copies into memory the step has just touched; a full ring
is transposed once (each env's steps in a row) and hashed with one update per env.
An env's digest is the same as hashing every step as it is made
(:meth:`Shard.hash <dmxshm.batch.shard.Shard.hash>`): its steps in order, each one's
bytes whole.

Measured for 256 envs of 235 bytes (docs/benchmarks.md, "the digest's share of a DB18
step"): writing into each env's own rows (env-major) cost 32 us a step, scattered
through memory the step did not touch; a compiled loop over the envs, 40 us."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class Held:
    """Up to ``steps`` steps of each of the envs whose digests' ``update`` methods are
    ``updates``, ``row_bytes`` a step, not yet hashed.

    Each env's unhashed steps are the ring's slots ``first[u]`` to ``slot`` (one shared
    write position: the envs step together); an env that does not step in a call has
    its earlier steps hashed then, so an env's held steps are never split by a gap.
    ``moved[u]`` is set when env ``u``'s digest takes steps (its owner clears it when it
    publishes the digest)."""

    def __init__(self, updates: Sequence[Callable[[Any], None]], steps: int,
                 row_bytes: int) -> None:
        envs = len(updates)
        self.updates, self.steps, self.row_bytes = updates, steps, row_bytes
        self.ring = np.zeros((steps, envs, row_bytes), np.uint8)
        self.slot = 0
        self.first = np.zeros(envs, np.int64)
        self.moved = np.zeros(envs, np.bool_)
        self.everyone = np.arange(envs)

    def count(self) -> int:
        """Steps held, over all envs."""
        return int((self.slot - self.first).sum())

    def add(self, idx: np.ndarray, tag: int, parts: Sequence[np.ndarray]) -> None:
        """Hold a step of the envs ``idx``: the byte ``tag``, then row ``i`` of each of
        ``parts`` (uint8 (len(idx), width) each) for env ``idx[i]``. Hash the held steps
        of every env not in ``idx``, and everything when the ring is full."""
        n, envs = len(idx), len(self.first)
        whole = n == envs and bool((idx == self.everyone).all())
        s = self.slot
        rows = self.ring[s] if whole else np.empty((n, self.row_bytes), np.uint8)
        rows[:, 0] = tag
        at = 1
        for part in parts:
            width = part.shape[1]
            rows[:, at:at + width] = part
            at += width
        if not whole:
            self.ring[s, idx] = rows
            idle = np.ones(envs, np.bool_)
            idle[idx] = False
            out = np.flatnonzero(idle)
            self.flush(out)  # (their steps before this one)
            self.first[out] = s + 1
        self.slot = s + 1
        if self.slot == self.steps:
            self.flush_all()

    def flush(self, us: np.ndarray) -> None:
        """Hash the held steps of the envs ``us``."""
        us = us[self.first[us] < self.slot]
        if not len(us):
            return
        ring, s, updates = self.ring, self.slot, self.updates
        for u, f in zip(us.tolist(), self.first[us].tolist(), strict=True):
            updates[u](np.ascontiguousarray(ring[f:s, u]))
        self.first[us] = s
        self.moved[us] = True

    def flush_all(self) -> None:
        """Hash every env's held steps (one transposed copy of the ring, then one
        update per env), and start the ring again."""
        s, first, updates = self.slot, self.first, self.updates
        us = np.flatnonzero(first < s)
        if len(us):
            block = s * self.row_bytes
            flat = np.ascontiguousarray(  # (env-major)
                self.ring[:s].transpose(1, 0, 2)).reshape(-1).data
            starts = (us * block + first[us] * self.row_bytes).tolist()
            for u, a in zip(us.tolist(), starts, strict=True):
                updates[u](flat[a:(u + 1) * block])
            self.moved[us] = True
        self.slot = 0
        first[:] = 0
