"""How the envs of asynchronous sends come back: announcements and one wake-up.

Each worker announces the envs it finished in its own completion ring, a
slice of the shared ``done_ids`` array (worker w's ring is
``done_ids[lo_w:hi_w]``, as long as its shard: an env is in flight at most
once, so no more announcements can be pending). An announcement is one
64-bit word, ``sequence << 32 | env``, written after the env's results: a
single aligned store, so the parent never sees half of it; a fence orders
the two where the CPU does not (:mod:`dmxshm.shm.fence`). ``done_count[w]``
is how many worker w announced so far.

The ``ready`` semaphore wakes the parent only when it can go on. The parent
publishes ``need``, the total count (all workers together) that gives it
what it waits for, looks once more, and sleeps; a worker announces, then
posts if the counts reach ``need``. ``need`` is a total and not a
remainder: the parent's last look may gather some of what it waited for,
which leaves a remainder too high (a worker then never posted: one hang in
20 000 ``recv()`` calls under load) but leaves the total right. Each side
stores, then fences (:func:`~dmxshm.shm.fence.full_fence`: a locked
instruction, and on x86-64 those have one total order), then loads: the
last of them to fence sees every store, so either the parent finds the envs
itself or a worker posts.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from dmxshm.shm.fence import NEEDS_FENCE, fence, full_fence

NOT_WAITING = 1 << 62
"""``need`` while the parent does not wait: no count reaches it."""


class Announcer:
    """Worker ``index``'s side: announce the envs of its shard ``[lo, hi)``."""

    def __init__(self, index: int, lo: int, hi: int, views: dict[str, np.ndarray],
                 ready: Any) -> None:
        self.index, self.lo, self.size = index, lo, hi - lo
        self.ring, self.count, self.need = views["done_ids"], views["done_count"], views["need"]
        self.t_env = views["t_env"]
        self.ready = ready
        self.announced = 0

    def announce(self, envs: list[int]) -> None:
        """Announce ``envs`` (global indices) finished, whose results are written."""
        self.publish(envs)
        full_fence()
        self.wake_if_needed()

    def publish(self, envs: list[int]) -> None:
        """The stores of :meth:`announce`."""
        self.t_env[envs] = time.perf_counter()
        if NEEDS_FENCE:
            fence()
        for i in envs:
            self.announced += 1
            self.ring[self.lo + (self.announced - 1) % self.size] = self.announced << 32 | i
        self.count[self.index] = self.announced

    def wake_if_needed(self) -> None:
        """The loads of :meth:`announce`: post ``ready`` if the parent can go on."""
        if int(self.count.sum()) >= int(self.need[0]):
            self.ready.release()


class Collector:
    """The parent's side: gather announcements, publish what it waits for."""

    def __init__(self, views: dict[str, np.ndarray], bounds: list[tuple[int, int]]) -> None:
        self.ring, self.need, self.t_env = views["done_ids"], views["need"], views["t_env"]
        self.count = views["done_count"]
        self.bounds = bounds
        self.consumed = [0] * len(bounds)  # announcements gathered, per worker
        self.finished: list[tuple[float, int]] = []  # (finish time, env), not yet taken
        self.need[0] = NOT_WAITING

    def gather(self) -> None:
        """Move every announcement there is into :attr:`finished`: those its worker
        counted (one call's envs come in together: a multi-agent batch's world is never
        seen in part)."""
        ring, t_env, count = self.ring, self.t_env, self.count
        for w, (lo, hi) in enumerate(self.bounds):
            seen = self.consumed[w]
            counted = int(count[w])
            if NEEDS_FENCE:
                fence()  # the count, then the ring words it covers
            while seen < counted:
                word = int(ring[lo + seen % (hi - lo)])
                if word >> 32 != seen + 1:
                    break
                if NEEDS_FENCE:
                    fence()
                i = word & 0xFFFFFFFF
                self.finished.append((float(t_env[i]), i))
                seen += 1
            self.consumed[w] = seen

    def ready_for(self, k: int) -> bool:
        """True if ``k`` envs are held; else publish the need: the caller may sleep
        on ``ready`` until a worker posts, then call this again."""
        if self.holds(k):
            return True
        self.publish_need(k)
        full_fence()  # publish, then look once more
        if self.holds(k):
            self.stop_waiting()
            return True
        return False

    def holds(self, k: int) -> bool:
        """Gather, then whether ``k`` envs are held."""
        self.gather()
        return len(self.finished) >= k

    def publish_need(self, k: int) -> None:
        """The store of :meth:`ready_for`: the total count that gives ``k`` held envs."""
        self.need[0] = sum(self.consumed) + k - len(self.finished)

    def stop_waiting(self) -> None:
        self.need[0] = NOT_WAITING

    def take(self, k: int) -> np.ndarray:
        """The ``k`` envs that finished first (held envs), removed from :attr:`finished`."""
        self.finished.sort()
        taken, self.finished = self.finished[:k], self.finished[k:]
        return np.array([i for _, i in taken], dtype=np.int64)
