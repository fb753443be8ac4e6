"""Single-writer ring buffers of numpy structured slots in shared memory.

Layout of the segment (every offset 64-byte aligned)::

    0     header line 0: magic, version, discipline, nslots, itemsize,
                         stride, data offset, dtype-descr length
    64    writer line:   write_seq, writer pid, start time, closed flag, role
    128   reader line:   read_seq, reads, reader pid, start time, role
    256   dtype descr (JSON, numpy ``dtype.descr``), up to 1792 bytes
    2048  per-slot sequence words (u64 x nslots)
    D     slots: nslots x stride bytes, stride = itemsize rounded up to 64

Two disciplines share this layout:

* ``blocking`` (gym mode): a ``free`` semaphore counts empty slots and a
  ``filled`` one counts written slots. The writer waits for a free slot, the
  reader for a filled one; nothing is overwritten or lost and order is kept.
  ``sem_post``/``sem_wait`` order the memory accesses around them.
* ``overwrite`` (realtime mode): the writer never waits. It overwrites the
  oldest slot under a seqlock: slot sequence word ``2s+1`` while write ``s``
  is in progress, ``2s+2`` once complete. A reader copies the slot and
  accepts it only if the word was ``2s+2`` before and after the copy, so it
  never returns a torn slot. Slots that the reader skips or that are
  overwritten before it reads them are drops:
  ``drops = (read_seq - reads) + max(0, write_seq - read_seq - nslots)``,
  computed from counters in the segment, so both sides see them.
  See :mod:`dmxshm.shm.fence` for the memory ordering on x86-64 and aarch64.

Each counter has exactly one writing process, so no atomic read-modify-write
is needed; aligned 8-byte stores are single-copy atomic on x86-64 and aarch64.
The one exception is taking a side (:meth:`Ring.bind`), which any process may
try: it reads the side's record and writes its own under the segment's lock
(:meth:`~dmxshm.shm.segment.Segment.locked`, whose kernel lock orders the
accesses), so two processes can never both hold a side. Readers that do not
lock (:meth:`Ring.peer`, for messages and liveness checks) load the pid first,
and bind stores it last: on x86-64 (TSO) a reader that sees a new pid sees the
rest of its record; elsewhere it may, for a moment, see the new pid beside the
previous start time and role.
"""

from __future__ import annotations

import enum
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import posix_ipc

from dmxshm import settings
from dmxshm.errors import (
    DmxError,
    LayoutError,
    PeerDiedError,
    RingClosedError,
    RingTimeoutError,
    SegmentMissingError,
    ShmError,
)
from dmxshm.shm.fence import NEEDS_FENCE, fence
from dmxshm.shm.peers import DEAD, Peer, me, peer_state
from dmxshm.shm.registry import Registry
from dmxshm.shm.segment import REMOVE_IPC_HINT, Segment
from dmxshm.shm.waiting import (
    EMPTY_OR_INTERRUPTED,
    acquire,
    first_chunk,
    spin_until,
    wait_semaphore,
)

MAGIC = int.from_bytes(b"DMXRING\x01", "little")
VERSION = 1
ALIGN = 64
DESCR_OFFSET = 256
SEQ_OFFSET = 2048
MAX_DESCR_BYTES = SEQ_OFFSET - DESCR_OFFSET
ROLE_BYTES = 32
# Word indices (u64) of the header fields.
_W_MAGIC, _W_VERSION, _W_DISC, _W_NSLOTS, _W_ITEMSIZE, _W_STRIDE, _W_DATA, _W_DESCR = range(8)
_W_WRITE_SEQ, _W_WRITER_PID, _W_WRITER_CTIME, _W_CLOSED = 8, 9, 10, 11
_B_WRITER_ROLE = 12 * 8
_W_READ_SEQ, _W_READS, _W_READER_PID, _W_READER_CTIME = 16, 17, 18, 19
_B_READER_ROLE = 20 * 8
_MAX_SEQLOCK_RETRIES = 100_000
_VALUES = posix_ipc.SEMAPHORE_VALUE_SUPPORTED  # sem_getvalue (not on macOS)


class Discipline(str, enum.Enum):
    """How a full ring behaves."""

    BLOCKING = "blocking"
    OVERWRITE = "overwrite"


_DISC_CODES = {Discipline.BLOCKING: 0, Discipline.OVERWRITE: 1}


def round_up(n: int, align: int = ALIGN) -> int:
    """Round ``n`` up to a multiple of ``align``.

    Example:
        >>> round_up(1), round_up(64), round_up(65)
        (64, 64, 128)
    """
    return -(-n // align) * align


def ring_size_bytes(dtype: np.dtype, nslots: int) -> int:
    """Bytes a ring of ``nslots`` slots of ``dtype`` occupies."""
    return round_up(SEQ_OFFSET + 8 * nslots) + nslots * round_up(dtype.itemsize)


@dataclass(frozen=True)
class RingStats:
    """Counters of a ring, readable by both sides.

    Attributes:
        writes: slots completely written.
        reads: slots returned to the reader.
        drops: slots the reader will never get (overwritten or skipped).
        pending: written slots the reader can still get.
    """

    writes: int
    reads: int
    drops: int
    pending: int


def count_drops(write_seq: int, read_seq: int, reads: int, nslots: int) -> int:
    """Drops of an overwrite ring from its three counters (see module doc)."""
    return (read_seq - reads) + max(0, write_seq - read_seq - nslots)


class Ring:
    """A single-writer, single-reader ring in shared memory.

    Create it with :meth:`create` (the creator owns and unlinks it) and open
    it elsewhere with :meth:`attach`; each process then takes a side with
    :meth:`bind` (``"writer"`` or ``"reader"``) so that the other side can
    name it when it dies.

    Example:
        >>> dt = np.dtype([("x", "<f8")])
        >>> with Registry() as reg:
        ...     ring = Ring.create(reg, "doc", dt, nslots=4)
        ...     ring.write(np.array((1.5,), dtype=dt))
        ...     float(ring.read()["x"])
        1.5
    """

    def __init__(self, seg: Segment, sems: dict[str, posix_ipc.Semaphore]) -> None:
        self.segment = seg
        self.name = seg.name
        buf = seg.buf
        self._ctl = memoryview(buf)[:DESCR_OFFSET].cast("Q")
        ctl = self._ctl
        if ctl[_W_MAGIC] != MAGIC or ctl[_W_VERSION] != VERSION:
            raise LayoutError(f"{seg.name} is not a dmxshm ring (or another version)")
        self.discipline = (
            Discipline.OVERWRITE if ctl[_W_DISC] == _DISC_CODES[Discipline.OVERWRITE]
            else Discipline.BLOCKING
        )
        self.nslots = int(ctl[_W_NSLOTS])
        descr = bytes(buf[DESCR_OFFSET:DESCR_OFFSET + ctl[_W_DESCR]]).decode()
        self.dtype = np.lib.format.descr_to_dtype(_tuplify(json.loads(descr)))
        self.stride = int(ctl[_W_STRIDE])
        if self.dtype.itemsize != ctl[_W_ITEMSIZE] or self.stride % ALIGN:
            raise LayoutError(f"ring {seg.name}: header does not match its dtype")
        self._seqs = memoryview(buf)[SEQ_OFFSET:SEQ_OFFSET + 8 * self.nslots].cast("Q")
        slots = np.ndarray((self.nslots,), dtype=self.dtype, buffer=buf,
                           offset=int(ctl[_W_DATA]), strides=(self.stride,))
        self.slots = slots
        # 0-d views, one per slot: the cheapest handle numpy offers for a copy.
        self._views = [slots[i, ...] for i in range(self.nslots)]
        self._raw = [np.ndarray((self.dtype.itemsize,), np.uint8, buf,
                                offset=int(ctl[_W_DATA]) + i * self.stride)
                     for i in range(self.nslots)]
        self._blocking = self.discipline is Discipline.BLOCKING
        self._spin_s = 0.0
        self._spin_pending = False
        self._known_dtype = self.dtype
        self._last_item: Any = None
        self._last_bytes: Any = None
        self._sems = sems
        # Only the semaphores of this ring's discipline exist; the others are None.
        self._free: Any = sems.get("free")
        self._filled: Any = sems.get("filled")
        self._bell: Any = sems.get("bell")
        self.side: str | None = None
        self._w = int(ctl[_W_WRITE_SEQ])
        self._r = int(ctl[_W_READ_SEQ])
        self._reads = int(ctl[_W_READS])

    # -- construction -----------------------------------------------------
    @classmethod
    def create(
        cls,
        registry: Registry,
        what: str,
        dtype: Any,
        nslots: int,
        discipline: Discipline | str = Discipline.BLOCKING,
    ) -> Ring:
        """Create a ring whose objects ``registry`` owns.

        Args:
            registry: the network's registry (it unlinks the ring).
            what: the ring's name part, e.g. ``"obs.0"``.
            dtype: a numpy structured dtype, one slot each.
            nslots: number of slots (>= 1; >= 2 for overwrite).
            discipline: ``"blocking"`` or ``"overwrite"``.

        Raises:
            ValueError: bad dtype or slot count.
            ShmSpaceError, SegmentExistsError: see :class:`Segment`.
        """
        dtype = np.dtype(dtype)
        disc = Discipline(discipline)
        if dtype.names is None:
            raise ValueError(f"ring slots need a structured dtype (with fields), got {dtype}")
        if dtype.hasobject:
            raise ValueError("ring slots cannot hold Python objects")
        min_slots = 2 if disc is Discipline.OVERWRITE else 1
        if int(nslots) < min_slots:
            raise ValueError(f"a {disc.value} ring needs at least {min_slots} slots, got {nslots}")
        descr = json.dumps(np.lib.format.dtype_to_descr(dtype)).encode()
        if len(descr) > MAX_DESCR_BYTES:
            raise ValueError(f"dtype description too long ({len(descr)} > {MAX_DESCR_BYTES} B)")
        seg = registry.create_segment(what, ring_size_bytes(dtype, nslots))
        ctl = memoryview(seg.buf)[:DESCR_OFFSET].cast("Q")
        ctl[_W_DISC] = _DISC_CODES[disc]
        ctl[_W_NSLOTS] = nslots
        ctl[_W_ITEMSIZE] = dtype.itemsize
        ctl[_W_STRIDE] = round_up(dtype.itemsize)
        ctl[_W_DATA] = round_up(SEQ_OFFSET + 8 * nslots)
        ctl[_W_DESCR] = len(descr)
        seg.buf[DESCR_OFFSET:DESCR_OFFSET + len(descr)] = descr
        ctl[_W_VERSION] = VERSION
        ctl[_W_MAGIC] = MAGIC  # last: an attacher never sees half a header
        ctl.release()
        sems = {}
        for kind, initial in _sem_plan(disc, nslots):
            sems[kind] = registry.create_semaphore(f"{seg.name}.{kind}", initial)
        return cls(seg, sems)

    @classmethod
    def attach(cls, name: str, side: str | None = None, role: str | None = None,
               spin_us: float | None = None) -> Ring:
        """Open a ring created elsewhere, and optionally :meth:`bind` a side.

        Raises:
            SegmentMissingError: the ring (or one of its semaphores) is gone.
            LayoutError: the segment is not a dmxshm ring.
        """
        seg = Segment.attach(name)
        sems: dict[str, posix_ipc.Semaphore] = {}
        try:
            if seg.size_bytes < SEQ_OFFSET:
                raise LayoutError(f"{name} is not a dmxshm ring (only {seg.size_bytes} bytes)")
            ctl = memoryview(seg.buf)[:64].cast("Q")
            magic, version, disc_code = ctl[_W_MAGIC], ctl[_W_VERSION], ctl[_W_DISC]
            ctl.release()
            if magic != MAGIC or version != VERSION:
                raise LayoutError(f"{name} is not a dmxshm ring (or another version)")
            disc = Discipline.OVERWRITE if disc_code == 1 else Discipline.BLOCKING
            for kind, _ in _sem_plan(disc, 1):
                try:
                    sems[kind] = posix_ipc.Semaphore(f"{name}.{kind}", 0)
                except posix_ipc.ExistentialError as exc:
                    raise SegmentMissingError(
                        f"semaphore {name}.{kind} of ring {name} does not exist. "
                        f"{REMOVE_IPC_HINT}"
                    ) from exc
            ring = cls(seg, sems)
        except BaseException:
            # posix_ipc never closes a semaphore it collects (sem_close unmaps it for
            # every thread of the process), so what was opened must be closed here.
            _close_all(sems)
            seg.close()
            raise
        if side is not None:
            try:
                ring.bind(side, role, spin_us)
            except BaseException:  # the side is taken (or the claim timed out): let go
                ring.close()
                raise
        return ring

    def bind(self, side: str, role: str | None = None, spin_us: float | None = None) -> Ring:
        """Declare this process the ring's ``"writer"`` or ``"reader"``.

        Args:
            side: ``"writer"`` or ``"reader"``.
            role: a name for messages and tools (default: the side).
            spin_us: how long a blocking wait busy-polls before it sleeps on
                the semaphore. Default (None): :data:`dmxshm.settings.RING_SPIN_US`
                (or ``DMXSHM_SPIN_US``),
                unless this process and its peer are pinned to the same
                single CPU, where spinning would only delay the peer (0).
                Decided once both sides are bound.

        Raises:
            ValueError: unknown side.
            DmxError: the side is held by another live process.
        """
        if side not in ("writer", "reader"):
            raise ValueError(f"side must be 'writer' or 'reader', got {side!r}")
        rec = me(role or side)  # outside the lock: psutil reads /proc
        pid_w, ctime_w, role_b = (
            (_W_WRITER_PID, _W_WRITER_CTIME, _B_WRITER_ROLE) if side == "writer"
            else (_W_READER_PID, _W_READER_CTIME, _B_READER_ROLE)
        )
        # Check and claim as one step: without the lock two processes could both
        # see the side free (or its holder dead) and both write their record.
        with self.segment.locked(settings.WAIT_TIMEOUT_S, f"to bind its {side}"):
            current = self.peer(side)
            if current.pid not in (0, os.getpid()) and peer_state(current) != DEAD:
                raise DmxError(
                    f"ring {self.name} already has a live {side}: {current.describe()}; "
                    "a ring has exactly one writer and one reader"
                )
            raw = rec.role.encode()[:ROLE_BYTES].ljust(ROLE_BYTES, b"\0")
            self.segment.buf[role_b:role_b + ROLE_BYTES] = raw
            self._ctl[ctime_w] = int(rec.create_time * 1e6)
            self._ctl[pid_w] = rec.pid  # last: it makes the record valid
        self.side = side
        self._spin_pending = spin_us is None
        self._spin_s = 0.0 if spin_us is None else max(float(spin_us), 0.0) / 1e6
        if self._spin_pending:
            self._resolve_spin()
        return self

    def _resolve_spin(self) -> None:
        """Choose the default spin once the peer is known (see :meth:`bind`)."""
        peer = self.peer("reader" if self.side == "writer" else "writer")
        if not peer.pid:
            return  # decide at a later wait
        mine = os.sched_getaffinity(0)
        try:
            theirs = os.sched_getaffinity(peer.pid)
        except OSError:
            theirs = set()
        shared_core = len(mine) == 1 and mine == theirs
        self._spin_s = 0.0 if shared_core else settings.spin_us(settings.RING_SPIN_US) / 1e6
        self._spin_pending = False

    def peer(self, side: str) -> Peer:
        """The process recorded for ``side`` (pid 0 if none yet)."""
        pid_w, ctime_w, role_b = (
            (_W_WRITER_PID, _W_WRITER_CTIME, _B_WRITER_ROLE) if side == "writer"
            else (_W_READER_PID, _W_READER_CTIME, _B_READER_ROLE)
        )
        pid = int(self._ctl[pid_w])  # first: bind stores it last (module docstring)
        create_time = self._ctl[ctime_w] / 1e6
        role = bytes(self.segment.buf[role_b:role_b + ROLE_BYTES]).rstrip(b"\0").decode()
        return Peer(role=role or side, pid=pid, create_time=create_time)

    # -- bookkeeping ------------------------------------------------------
    @property
    def closed(self) -> bool:
        """True once the writer has called :meth:`close_writer`."""
        return bool(self._ctl[_W_CLOSED])

    def stats(self) -> RingStats:
        """Current counters (consistent enough for monitoring, exact when idle)."""
        ctl = self._ctl
        # Each counter only grows, and is stored after the one before it here
        # (reads after read_seq, write_seq before its reader can see it): read
        # in this order, the three are consistent even while both sides run.
        reads = int(ctl[_W_READS])
        r = int(ctl[_W_READ_SEQ])
        w = int(ctl[_W_WRITE_SEQ])
        if self.discipline is Discipline.BLOCKING:
            return RingStats(writes=w, reads=r, drops=0, pending=w - r)
        return RingStats(writes=w, reads=reads, drops=count_drops(w, r, reads, self.nslots),
                         pending=min(self.nslots, w - r))

    def _check(self, waiting_side: str, what: str) -> None:
        """Raise if the wait can never end; called between wait chunks."""
        other = "reader" if waiting_side == "writer" else "writer"
        ready = self._has_free() if waiting_side == "writer" else self._has_data()
        if ready:
            return  # what we wait for is there (its signal may trail): keep going
        if waiting_side == "reader" and self.closed:
            raise RingClosedError(f"ring {self.name}: the writer closed it, nothing left to read")
        peer = self.peer(other)
        if peer.pid and peer_state(peer) == DEAD:
            raise PeerDiedError(
                f"ring {self.name}: the {other} {peer.role} (pid {peer.pid}) died while "
                f"this {waiting_side} waited for {what}",
                role=peer.role, pid=peer.pid,
            )

    def _timeout_error(self, waiting_side: str, what: str, waited_s: float) -> RingTimeoutError:
        other = "reader" if waiting_side == "writer" else "writer"
        return RingTimeoutError(
            f"ring {self.name}: waited {waited_s:.2f} s for {what}; the {other} is "
            f"{self.peer(other).describe()}. Is it stuck, or too slow for this timeout?"
        )

    def _check_writer(self) -> None:
        self._check("writer", "a free slot")

    def _check_reader(self) -> None:
        self._check("reader", "a new slot")

    def _timeout_writer(self, waited_s: float) -> Exception:
        return self._timeout_error("writer", "a free slot", waited_s)

    def _timeout_reader(self, waited_s: float) -> Exception:
        return self._timeout_error("reader", "a new slot", waited_s)

    def _has_free(self) -> bool:
        return self._w - self._ctl[_W_READ_SEQ] < self.nslots

    def _has_data(self) -> bool:
        return self._ctl[_W_WRITE_SEQ] != self._r

    # -- writer -----------------------------------------------------------
    def write(self, item: Any, timeout_s: float = settings.WAIT_TIMEOUT_S) -> None:
        """Write one slot (copied from ``item``, a value of the ring's dtype).

        In blocking mode this waits up to ``timeout_s`` for a free slot; in
        overwrite mode it never waits.

        Raises:
            PeerDiedError: the reader died while we waited.
            RingTimeoutError: no free slot in time (blocking only).
        """
        if not self._blocking:
            self._overwrite(item)
            return
        w = self._w
        free = self._free
        if _VALUES and free.value:
            # A free slot is there (the common case), and only this writer takes
            # them: the try-wait succeeds, cannot sleep, so there is no signal
            # to miss and no liveness to check. (A failed try-wait would raise,
            # which costs more than reading the value.)
            free.acquire(0)
        else:
            self._acquire_free(w, timeout_s)
        i = w % self.nslots
        try:
            self._copy_in(i, item)
        except BaseException:
            self._free.release()  # nothing published: the slot is free again
            raise
        self._publish(w, i)
        self._filled.release()

    @contextmanager
    def writing(self, timeout_s: float = settings.WAIT_TIMEOUT_S) -> Iterator[np.ndarray]:
        """Fill the next slot in place (zero-copy); published on exit.

        Yields:
            a 0-d structured view of the slot. In overwrite mode it is
            marked as being written for the whole block, so keep it short.
        """
        w = self._w
        i = w % self.nslots
        if self._blocking:
            self._acquire_free(w, timeout_s)
            try:
                yield self._views[i]
            except BaseException:
                self._free.release()  # nothing published: the slot is free again
                raise
            self._publish(w, i)
            self._filled.release()
        else:
            # If the block raises, the slot stays marked "being written" and
            # write_seq does not move: readers skip it, the next write redoes it.
            self._seqs[i] = 2 * w + 1
            if NEEDS_FENCE:
                fence()
            yield self._views[i]
            if NEEDS_FENCE:
                fence()
            self._publish(w, i)
            self._ring_bell()

    def _copy_in(self, i: int, item: Any) -> None:
        # A byte copy skips numpy's per-call structured-dtype machinery
        # (~0.5 us saved per slot).
        if item is self._last_item:  # the same array again: its bytes view still holds
            self._raw[i][...] = self._last_bytes
            return
        if type(item) is np.ndarray:
            dt = item.dtype
            if dt is self._known_dtype or dt == self.dtype:
                self._known_dtype = dt  # an `is` test next time: equality costs 0.1 us
                data = np.frombuffer(item, np.uint8)
                self._raw[i][...] = data
                # kept (the reference keeps the array alive, so `is` cannot
                # match a new one): a writer that refills one array skips frombuffer
                self._last_item, self._last_bytes = item, data
                return
        self._views[i][...] = item

    def _acquire_free(self, w: int, timeout_s: float) -> None:
        if self._spin_pending:
            self._resolve_spin()
        if self._spin_s and w - self._ctl[_W_READ_SEQ] >= self.nslots:
            spin_until(self._has_free, self._spin_s)
        first = first_chunk(timeout_s) if timeout_s > 0 else 0
        try:
            acquire(self._free, first)
        except EMPTY_OR_INTERRUPTED:
            wait_semaphore(self._free, timeout_s, self._check_writer,
                           self._timeout_writer, waited_s=first)

    def _publish(self, w: int, i: int) -> None:
        self._seqs[i] = 2 * w + 2
        self._w = w + 1
        self._ctl[_W_WRITE_SEQ] = w + 1

    def _overwrite(self, item: Any) -> None:
        w = self._w
        i = w % self.nslots
        self._seqs[i] = 2 * w + 1
        if NEEDS_FENCE:
            fence()
        self._copy_in(i, item)
        if NEEDS_FENCE:
            fence()
        self._publish(w, i)
        self._ring_bell()

    def _ring_bell(self) -> None:
        bell = self._bell
        if bell.value == 0:  # cap at 1: never overflows
            bell.release()

    def close_writer(self) -> None:
        """Mark the end of the stream: a reader that drained it gets RingClosedError."""
        self._ctl[_W_CLOSED] = 1
        (self._filled or self._bell).release()

    # -- reader -----------------------------------------------------------
    def read(self, timeout_s: float = settings.WAIT_TIMEOUT_S, newest: bool = True) -> np.ndarray:
        """Return a copy of the next slot.

        Blocking mode: the oldest unread slot, waiting up to ``timeout_s``.
        Overwrite mode: the newest complete slot not read yet (``newest=True``)
        or the oldest still available (``newest=False``), waiting up to
        ``timeout_s`` for one to appear; skipped slots count as drops.

        Returns:
            a 0-d structured array owned by the caller.

        Raises:
            PeerDiedError: the writer died while we waited.
            RingClosedError: the writer closed the ring and it is drained.
            RingTimeoutError: nothing to read in time.
        """
        if self._blocking:
            r = self._r
            filled = self._filled
            if _VALUES and filled.value:  # a slot is there: no sleep (see write)
                filled.acquire(0)
                if self._ctl[_W_WRITE_SEQ] == r:  # the close token
                    filled.release()
                    raise RingClosedError(
                        f"ring {self.name}: the writer closed it, nothing left to read")
            else:
                self._acquire_filled(r, timeout_s)
            out = np.ndarray((), self.dtype, self._raw[r % self.nslots].copy())
            self._consume(r)
            self._free.release()
            return out
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        while True:
            item = self._seqlock_read(newest)
            if item is not None:
                return item
            if self._ctl[_W_CLOSED] and not self._has_data():
                raise RingClosedError(
                    f"ring {self.name}: the writer closed it, nothing left to read")
            now = time.monotonic()
            if now >= deadline:
                raise self._timeout_reader(now - t0)
            try:
                acquire(self._bell, first_chunk(deadline - now))
            except EMPTY_OR_INTERRUPTED:
                self._check_reader()

    def try_read(self, newest: bool = True) -> np.ndarray | None:
        """Like :meth:`read` but never waits: None when nothing is new."""
        if not self._blocking:
            return self._seqlock_read(newest)
        try:
            self._filled.acquire(0)
        except posix_ipc.BusyError:
            return None
        r = self._r
        if self._ctl[_W_WRITE_SEQ] == r:  # the close token, not data
            self._filled.release()
            return None
        out = np.ndarray((), self.dtype, self._raw[r % self.nslots].copy())
        self._consume(r)
        self._free.release()
        return out

    def _seqlock_read(self, newest: bool) -> np.ndarray | None:
        ctl, seqs, n = self._ctl, self._seqs, self.nslots
        oldest = 0  # oldest-first: first write not known to be lost
        for _ in range(_MAX_SEQLOCK_RETRIES):
            w = ctl[_W_WRITE_SEQ]
            r = self._r
            s = w - 1 if newest else max(oldest, r, w - n)
            if s >= w or s < r:
                return None
            i = s % n
            if NEEDS_FENCE:
                fence()
            before = seqs[i]
            if before != 2 * s + 2:
                # Write s was overwritten, or is being overwritten (possibly by
                # a writer stalled mid-slot): the oldest-first reader moves on
                # to s+1 (s becomes a drop); the newest-first one looks again.
                if before > 2 * s + 2 and not newest:
                    oldest = s + 1
                continue
            if NEEDS_FENCE:
                fence()
            data = self._raw[i].copy()
            if NEEDS_FENCE:
                fence()
            if seqs[i] != before:
                continue  # torn: the writer came round during the copy
            self._consume(s)
            return np.ndarray((), self.dtype, data)
        raise DmxError(
            f"ring {self.name}: the writer laps the reader faster than it can copy one "
            f"slot ({_MAX_SEQLOCK_RETRIES} retries); give the ring more slots"
        )

    def peek(self, count: int = 1) -> np.ndarray:
        """The newest ``count`` complete slots of an overwrite ring, oldest first,
        without reading them: the reader's position, its counters and the drops
        are untouched, and the writer never waits. For onlookers (the live view)
        beside the ring's own reader; a slot being written or overwritten during
        the copy is left out.

        Raises:
            ShmError: on a blocking ring (its slots are the reader's to take).
        """
        if self._blocking:
            raise ShmError(f"ring {self.name}: only an overwrite ring can be peeked at")
        w = int(self._ctl[_W_WRITE_SEQ])
        seqs, n = self._seqs, self.nslots
        out = []
        for s in range(max(0, w - min(count, n)), w):
            i = s % n
            if NEEDS_FENCE:
                fence()
            before = seqs[i]
            if before != 2 * s + 2:
                continue  # overwritten, or being written
            if NEEDS_FENCE:
                fence()
            data = self._raw[i].copy()
            if NEEDS_FENCE:
                fence()
            if seqs[i] == before:
                out.append(data)
        return (np.frombuffer(b"".join(d.tobytes() for d in out), self.dtype) if out
                else np.zeros(0, self.dtype))

    def _consume(self, s: int) -> None:
        self._reads += 1
        self._r = s + 1
        # read_seq first: a concurrent stats() then always sees reads <= read_seq.
        self._ctl[_W_READ_SEQ] = s + 1
        self._ctl[_W_READS] = self._reads

    @contextmanager
    def reading(self, timeout_s: float = settings.WAIT_TIMEOUT_S) -> Iterator[np.ndarray]:
        """Read the next slot in place (zero-copy, blocking mode only).

        The slot stays yours until the block ends; the writer cannot reuse it.

        Raises:
            ShmError: on an overwrite ring, where only copies are safe.
        """
        if not self._blocking:
            raise ShmError("zero-copy reading needs a blocking ring; use read() to copy")
        r = self._r
        self._acquire_filled(r, timeout_s)
        try:
            yield self._views[r % self.nslots]
        except BaseException:
            self._filled.release()  # not consumed: the next read gets this slot again
            raise
        self._consume(r)
        self._free.release()

    def _acquire_filled(self, r: int, timeout_s: float) -> None:
        ctl = self._ctl
        if self._spin_pending:
            self._resolve_spin()
        if self._spin_s and ctl[_W_WRITE_SEQ] == r:
            spin_until(self._has_data, self._spin_s)
        first = first_chunk(timeout_s) if timeout_s > 0 else 0
        try:
            acquire(self._filled, first)
        except EMPTY_OR_INTERRUPTED:
            wait_semaphore(self._filled, timeout_s, self._check_reader,
                           self._timeout_reader, waited_s=first)
        if ctl[_W_WRITE_SEQ] == r:  # woken by close_writer, no data
            self._filled.release()  # wake the next read too
            raise RingClosedError(f"ring {self.name}: the writer closed it, nothing left to read")

    # -- teardown ---------------------------------------------------------
    def close(self) -> None:
        """Release this process's handles (the registry unlinks the names)."""
        self._views = []
        self._raw = []
        self.slots = None
        for mv in (self._ctl, self._seqs):
            mv.release()
        _close_all(self._sems)
        self._sems = {}
        self.segment.close()

    def __enter__(self) -> Ring:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Ring({self.name!r}, {self.discipline.value}, nslots={self.nslots}, "
                f"dtype={self.dtype})")


def _close_all(sems: dict[str, posix_ipc.Semaphore]) -> None:
    """Close every handle in ``sems`` (an attacher closes, it never unlinks)."""
    for sem in sems.values():
        sem.close()


def _sem_plan(disc: Discipline, nslots: int) -> list[tuple[str, int]]:
    if disc is Discipline.BLOCKING:
        return [("free", nslots), ("filled", 0)]
    return [("bell", 0)]


def _tuplify(descr: Any) -> Any:
    """JSON turns the tuples of ``dtype.descr`` into lists; turn them back."""
    if isinstance(descr, str):
        return descr
    fields = []
    for field in descr:
        name, fmt, *shape = field
        item = (name, _tuplify(fmt), *(tuple(s) for s in shape))
        fields.append(item)
    return fields
