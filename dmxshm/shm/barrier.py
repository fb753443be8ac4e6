"""A reusable N-party barrier on POSIX semaphores, across processes.

dmxshm uses it as the start gate of every run (:mod:`dmxshm.proc.gate`):
each process sets itself up, then waits here, so the run's clock starts only
when all are ready. It does not pace gym mode: gym mode's lockstep comes from
the blocking rings (the engine reads every command ring each step, see
:mod:`dmxshm.network.engine`), not from this barrier.

Layout of the segment::

    0    magic, version, parties, count, generation, broken
    64   one 64-byte record per party: pid, start time, arrived generation, role

A ``mutex`` semaphore guards ``count``; the last party to arrive resets the
count, bumps the generation and opens the gate of that generation for the
N-1 others. Two gates alternate by the parity of the generation, so a fast
party that arrives at generation g+1 can never take a token meant for a slow
party still leaving generation g (to arrive at g+2, everyone must have left
g). A wait that times out, or that sees a party die, breaks the barrier:
every party then gets :class:`~dmxshm.errors.BrokenBarrierError` or the
error that names the culprit, never an endless wait.
"""

from __future__ import annotations

import os
import time

import posix_ipc

from dmxshm import settings
from dmxshm.errors import (
    BarrierTimeoutError,
    BrokenBarrierError,
    DmxError,
    LayoutError,
    PeerDiedError,
    SegmentMissingError,
)
from dmxshm.shm.peers import DEAD, Peer, me, peer_state
from dmxshm.shm.registry import Registry
from dmxshm.shm.segment import REMOVE_IPC_HINT, Segment
from dmxshm.shm.waiting import wait_semaphore

MAGIC = int.from_bytes(b"DMXBARR\x01", "little")
VERSION = 1
_W_MAGIC, _W_VERSION, _W_PARTIES, _W_COUNT, _W_GEN, _W_BROKEN = range(6)
_REC = 64
_R_PID, _R_CTIME, _R_ARRIVED = 0, 1, 2
_ROLE_AT, _ROLE_BYTES = 24, 40
_SEMS = (("mutex", 1), ("gate0", 0), ("gate1", 0))


class Barrier:
    """N processes wait until all have arrived, then all go on; reusable.

    Each :meth:`wait` is one generation: the barrier can be waited at again
    and again, as :class:`threading.Barrier` can. dmxshm waits at it once per
    run, as the start gate (:func:`dmxshm.proc.gate.wait_for_start`).

    Example:
        >>> with Registry() as reg:
        ...     b = Barrier.create(reg, "doc", parties=1)
        ...     _ = b.join(0, "engine")
        ...     b.wait(), b.wait()
        (0, 1)
    """

    def __init__(self, seg: Segment, sems: dict[str, posix_ipc.Semaphore]) -> None:
        self.segment = seg
        self.name = seg.name
        self._ctl = memoryview(seg.buf)[:64].cast("Q")
        if self._ctl[_W_MAGIC] != MAGIC or self._ctl[_W_VERSION] != VERSION:
            raise LayoutError(f"{seg.name} is not a dmxshm barrier (or another version)")
        self.parties = int(self._ctl[_W_PARTIES])
        self._recs = memoryview(seg.buf)[64:64 + _REC * self.parties].cast("Q")
        self._mutex = sems["mutex"]
        self._gates = (sems["gate0"], sems["gate1"])
        self._sems = sems
        self.party: int | None = None

    @classmethod
    def create(cls, registry: Registry, what: str, parties: int) -> Barrier:
        """Create a barrier for ``parties`` processes (>= 1)."""
        if int(parties) < 1:
            raise ValueError(f"a barrier needs at least one party, got {parties}")
        seg = registry.create_segment(what, 64 + _REC * parties)
        ctl = memoryview(seg.buf)[:64].cast("Q")
        ctl[_W_PARTIES] = parties
        ctl[_W_VERSION] = VERSION
        ctl[_W_MAGIC] = MAGIC
        ctl.release()
        sems = {k: registry.create_semaphore(f"{seg.name}.{k}", v) for k, v in _SEMS}
        return cls(seg, sems)

    @classmethod
    def attach(cls, name: str, party: int | None = None, role: str | None = None) -> Barrier:
        """Open a barrier created elsewhere, and :meth:`join` it if ``party`` is given."""
        seg = Segment.attach(name)
        sems: dict[str, posix_ipc.Semaphore] = {}
        try:
            head = memoryview(seg.buf)[:16].cast("Q") if seg.size_bytes >= 64 else None
            ok = head is not None and head[_W_MAGIC] == MAGIC and head[_W_VERSION] == VERSION
            if head is not None:
                head.release()
            if not ok:
                raise LayoutError(f"{name} is not a dmxshm barrier (or another version)")
            for kind, _ in _SEMS:
                try:
                    sems[kind] = posix_ipc.Semaphore(f"{name}.{kind}", 0)
                except posix_ipc.ExistentialError as exc:
                    raise SegmentMissingError(
                        f"semaphore {name}.{kind} of barrier {name} does not exist. "
                        f"{REMOVE_IPC_HINT}"
                    ) from exc
            barrier = cls(seg, sems)
        except BaseException:
            # posix_ipc never closes a semaphore it collects: close what was opened.
            for sem in sems.values():
                sem.close()
            seg.close()
            raise
        if party is not None:
            try:
                barrier.join(party, role)
            except BaseException:  # the party is taken (or the claim timed out): let go
                barrier.close()
                raise
        return barrier

    def join(self, party: int, role: str | None = None) -> Barrier:
        """Take party slot ``party`` (0 <= party < parties) under ``role``."""
        if not 0 <= party < self.parties:
            raise ValueError(f"party must be in [0, {self.parties}), got {party}")
        rec = me(role or f"party-{party}")  # outside the lock: psutil reads /proc
        base = party * (_REC // 8)
        at = 64 + party * _REC + _ROLE_AT
        # Check and claim as one step, as Ring.bind does (see its module docstring).
        with self.segment.locked(settings.WAIT_TIMEOUT_S, f"to join party {party}"):
            holder = self.peer(party)
            if holder.pid not in (0, os.getpid()) and peer_state(holder) != DEAD:
                raise DmxError(f"barrier {self.name}: party {party} is held by a live "
                               f"process: {holder.describe()}")
            self.segment.buf[at:at + _ROLE_BYTES] = rec.role.encode()[:_ROLE_BYTES].ljust(
                _ROLE_BYTES, b"\0")
            self._recs[base + _R_CTIME] = int(rec.create_time * 1e6)
            self._recs[base + _R_ARRIVED] = self._ctl[_W_GEN]
            self._recs[base + _R_PID] = rec.pid  # last: it makes the record valid
        self.party = party
        return self

    def peer(self, party: int) -> Peer:
        """The process recorded for ``party`` (pid 0 if it has not joined)."""
        base = party * (_REC // 8)
        at = 64 + party * _REC + _ROLE_AT
        pid = int(self._recs[base + _R_PID])  # first: join stores it last (see Ring.peer)
        create_time = self._recs[base + _R_CTIME] / 1e6
        role = bytes(self.segment.buf[at:at + _ROLE_BYTES]).rstrip(b"\0").decode()
        return Peer(role=role or f"party-{party}", pid=pid, create_time=create_time)

    @property
    def generation(self) -> int:
        """How many times the barrier has opened."""
        return int(self._ctl[_W_GEN])

    @property
    def broken(self) -> bool:
        """True once a timeout or a dead party broke the barrier."""
        return bool(self._ctl[_W_BROKEN])

    def abort(self) -> None:
        """Break the barrier: every waiting and future :meth:`wait` raises."""
        self._ctl[_W_BROKEN] = 1
        for gate in self._gates:
            for _ in range(self.parties):
                gate.release()
        self._mutex.release()

    def _missing(self, gen: int) -> list[Peer]:
        """Parties that have not arrived at generation ``gen`` yet."""
        return [self.peer(p) for p in range(self.parties)
                if self._recs[p * (_REC // 8) + _R_ARRIVED] <= gen]

    def _check(self, gen: int | None) -> None:
        if self.broken:
            raise BrokenBarrierError(f"barrier {self.name} is broken (a party timed out or died)")
        candidates = ([self.peer(p) for p in range(self.parties)] if gen is None
                      else self._missing(gen))
        for peer in candidates:
            if peer.pid and peer_state(peer) == DEAD:
                self.abort()
                raise PeerDiedError(
                    f"barrier {self.name}: {peer.role} (pid {peer.pid}) died before it "
                    "arrived; the barrier is broken", role=peer.role, pid=peer.pid)

    def wait(self, timeout_s: float = settings.WAIT_TIMEOUT_S) -> int:
        """Wait until every party has called :meth:`wait`.

        Args:
            timeout_s: the longest time to wait.

        Returns:
            the generation that just opened (0 the first time).

        Raises:
            BarrierTimeoutError: not everyone arrived in time; names who.
            PeerDiedError: a party that had not arrived died.
            BrokenBarrierError: the barrier was broken earlier.
        """
        if self.party is None:
            raise DmxError(f"barrier {self.name}: join() a party before wait()")
        n = self.parties
        t0 = time.monotonic()
        wait_semaphore(self._mutex, timeout_s, lambda: self._check(None),
                       lambda waited: self._timed_out(None, waited))
        ctl = self._ctl
        if ctl[_W_BROKEN]:
            self._mutex.release()
            raise BrokenBarrierError(f"barrier {self.name} is broken (a party timed out or died)")
        gen = int(ctl[_W_GEN])
        self._recs[self.party * (_REC // 8) + _R_ARRIVED] = gen + 1
        count = ctl[_W_COUNT] + 1
        if count == n:
            ctl[_W_COUNT] = 0
            ctl[_W_GEN] = gen + 1
            self._mutex.release()
            gate = self._gates[gen % 2]
            for _ in range(n - 1):
                gate.release()
            return gen
        ctl[_W_COUNT] = count
        self._mutex.release()
        # Counted as arrived from here: leaving early for any reason (Ctrl-C,
        # a signal, a timeout) must break the barrier, or it would open later
        # with this party missing.
        waited = time.monotonic() - t0
        try:
            wait_semaphore(self._gates[gen % 2], timeout_s - waited, lambda: self._check(gen),
                           lambda w: self._timed_out(gen, w + waited))
        except BaseException:
            if not self.broken:
                self.abort()
            raise
        if ctl[_W_GEN] <= gen:  # woken by abort(), not by the last arrival
            raise BrokenBarrierError(f"barrier {self.name} is broken (a party timed out or died)")
        return gen

    def _timed_out(self, gen: int | None, waited_s: float) -> Exception:
        self.abort()
        if gen is None:
            others = ", ".join(self.peer(p).describe() for p in range(self.parties)
                               if p != self.party)
            return BarrierTimeoutError(
                f"barrier {self.name}: waited {waited_s:.2f} s (party {self.party}) for its "
                f"mutex, which another party holds; parties: {others}. One of them was "
                "stopped (SIGSTOP?) or killed while it held the mutex."
            )
        who = self._missing(gen)
        names = ", ".join(p.describe() for p in who) or "nobody (all arrived)"
        return BarrierTimeoutError(
            f"barrier {self.name}: waited {waited_s:.2f} s (party {self.party}, "
            f"generation {gen}); not arrived: {names}. A stopped process was paused "
            "(SIGSTOP?); a live one is too slow for this timeout."
        )

    def close(self) -> None:
        """Release this process's handles (the registry unlinks the names)."""
        self._ctl.release()
        self._recs.release()
        for sem in self._sems.values():
            sem.close()
        self.segment.close()

    def __enter__(self) -> Barrier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


