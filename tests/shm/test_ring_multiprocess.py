"""Multi-process tests of dmxshm.shm.ring: stress and fault injection.

The writer or reader on the other side is a spawned child. Parent and child
synchronise on the ring itself and on multiprocessing Events, never on sleeps;
every child is stopped in a ``finally``. Durations only bound the waits, so a
failure is an error rather than a hang; the assertions are about orders,
counts and which error names whom.
"""

from __future__ import annotations

import os
import signal
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event

import numpy as np
import pytest

from dmxshm.errors import PeerDiedError, RingClosedError, RingTimeoutError
from dmxshm.shm.names import list_entries
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Discipline, Ring, RingStats
from tests import procs
from tests.shm.slots import FIELD_DT, make_item

# Spawning a child and importing numpy + dmxshm there; generous for slow CI.
CHILD_START_TIMEOUT_S = 30.0
# Bound of any single ring wait in the stress tests (the peer is busy, not stuck).
STRESS_WAIT_S = 30.0
# Bound of a wait that must end early with PeerDiedError (a liveness poll is 50 ms).
PEER_DEATH_TIMEOUT_S = 20.0
# Whole-test bounds for pytest-timeout.
STRESS_TEST_TIMEOUT_S = 120
FAULT_TEST_TIMEOUT_S = 90

STRESS_SLOTS = 100_000
PAYLOAD_WORDS = 64
STRESS_DT = np.dtype([
    ("seq", "<u8"),
    ("payload", "<u4", (PAYLOAD_WORDS,)),
    ("checksum", "<u8"),
])
_WEIGHTS = np.arange(1, PAYLOAD_WORDS + 1, dtype=np.uint64)
_WORD_OFFSETS = np.arange(PAYLOAD_WORDS, dtype=np.uint64) * np.uint64(40503)
_BATCH = 4096


def stress_payload(seqs: np.ndarray) -> np.ndarray:
    """Pseudo-random u32 words derived from each sequence number."""
    mixed = seqs.astype(np.uint64)[:, None] * np.uint64(2654435761) + _WORD_OFFSETS
    return (mixed & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def checksum(payload: np.ndarray) -> np.ndarray:
    return payload.astype(np.uint64) @ _WEIGHTS


def stress_batch(start: int, count: int) -> np.ndarray:
    batch = np.zeros(count, dtype=STRESS_DT)
    batch["seq"] = np.arange(start, start + count, dtype=np.uint64)
    batch["payload"] = stress_payload(batch["seq"])
    batch["checksum"] = checksum(batch["payload"])
    return batch


def is_whole(item: np.ndarray) -> bool:
    """The slot is one write: its checksum and its payload match its seq."""
    payload = item["payload"]
    return (int(checksum(payload[None])[0]) == int(item["checksum"])
            and bool((payload == stress_payload(np.array([item["seq"]]))[0]).all()))


def stress_writer(name: str, nslots_total: int, drained: Event, spin_us: float | None) -> None:
    """Child: write ``nslots_total`` stress slots, close, wait for the drain."""
    ring = Ring.attach(name, side="writer", role="stress-writer", spin_us=spin_us)
    try:
        for start in range(0, nslots_total, _BATCH):
            for item in stress_batch(start, min(_BATCH, nslots_total - start)):
                ring.write(item, timeout_s=STRESS_WAIT_S)
        ring.close_writer()
        # Stay alive until the reader has seen the close: a writer that exits
        # at once makes an overwrite reader fail (see test_reader_after_writer_closed_and_exited).
        drained.wait(STRESS_WAIT_S)
    finally:
        ring.close()


def run_stress(registry: Registry, discipline: Discipline, nslots: int, newest: bool,
               spin_us: float | None = None) -> tuple[RingStats, int, int, int]:
    """Read a child's stress stream to its end; return (stats, reads, torn, last seq)."""
    ring = Ring.create(registry, "stress", STRESS_DT, nslots, discipline)
    ring.bind("reader", "stress-reader", spin_us=spin_us)
    drained = procs.CTX.Event()
    child = procs.start(stress_writer, ring.name, STRESS_SLOTS, drained, spin_us)
    try:
        reads = torn = 0
        last = -1
        while True:
            try:
                item = ring.read(timeout_s=STRESS_WAIT_S, newest=newest)
            except RingClosedError:
                break
            seq = int(item["seq"])
            if discipline is Discipline.BLOCKING:
                assert seq == last + 1, f"read seq {seq} after {last}: lost or reordered"
            else:
                assert seq > last, f"read seq {seq} after {last}: went backwards"
            # The check is also the reader's extra work that makes it the slower side.
            torn += not is_whole(item)
            last = seq
            reads += 1
        stats = ring.stats()
        drained.set()
        child.join(CHILD_START_TIMEOUT_S)
        assert child.exitcode == 0, f"writer child failed (exit code {child.exitcode})"
        return stats, reads, torn, last
    finally:
        drained.set()
        procs.stop(child)
        ring.close()


@pytest.mark.slow
@pytest.mark.timeout(STRESS_TEST_TIMEOUT_S)
@pytest.mark.parametrize("newest", [True, False], ids=["newest", "oldest"])
def test_stress_overwrite(registry: Registry, newest: bool) -> None:
    stats, reads, torn, last = run_stress(registry, Discipline.OVERWRITE, 8, newest)
    assert torn == 0, f"{torn} torn slots out of {reads} reads"
    assert reads >= 1 and last == STRESS_SLOTS - 1  # the final write is never lost
    assert stats.writes == STRESS_SLOTS
    assert stats.reads == reads
    assert stats.pending == 0
    assert stats.drops + stats.reads == stats.writes


@pytest.mark.slow
@pytest.mark.timeout(STRESS_TEST_TIMEOUT_S)
# Both wait paths: spin-then-sleep (the default with two CPUs) and sleep only.
@pytest.mark.parametrize("spin_us", [None, 0.0], ids=["default-spin", "no-spin"])
def test_stress_blocking(registry: Registry, spin_us: float | None) -> None:
    stats, reads, torn, last = run_stress(registry, Discipline.BLOCKING, 16, newest=False,
                                          spin_us=spin_us)
    assert torn == 0
    assert reads == STRESS_SLOTS and last == STRESS_SLOTS - 1
    assert stats == RingStats(writes=STRESS_SLOTS, reads=STRESS_SLOTS, drops=0, pending=0)


# -- a peer killed with SIGKILL --------------------------------------------------

def hold_slot(name: str, role: str, holding: Event, never: Event) -> None:
    """Child: take a slot in place and keep it until killed."""
    ring = Ring.attach(name, side="reader", role=role)
    with ring.reading(timeout_s=CHILD_START_TIMEOUT_S):
        holding.set()
        never.wait(PEER_DEATH_TIMEOUT_S * 3)


def write_then_hang(name: str, role: str, wrote: Event, never: Event) -> None:
    """Child: write one slot, then hang until killed."""
    ring = Ring.attach(name, side="writer", role=role)
    ring.write(make_item(FIELD_DT, 1), timeout_s=CHILD_START_TIMEOUT_S)
    wrote.set()
    never.wait(PEER_DEATH_TIMEOUT_S * 3)


def kill(child: BaseProcess, reap: bool) -> None:
    """SIGKILL ``child``; reap it, or leave a zombie (which must count as dead too)."""
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    if reap:
        child.join(CHILD_START_TIMEOUT_S)
        assert child.exitcode == -signal.SIGKILL


def assert_names_peer(err: PeerDiedError, role: str, pid: int, side: str) -> None:
    assert (err.role, err.pid) == (role, pid)
    assert role in str(err) and f"pid {pid}" in str(err) and side in str(err)


@pytest.mark.timeout(FAULT_TEST_TIMEOUT_S)
@pytest.mark.parametrize("reap", [False, True], ids=["zombie", "reaped"])
def test_writer_learns_reader_holding_slot_died(registry: Registry, reap: bool) -> None:
    ring = Ring.create(registry, "held", FIELD_DT, 2).bind("writer", "engine")
    holding, never = procs.CTX.Event(), procs.CTX.Event()
    ring.write(make_item(FIELD_DT, 0))
    child = procs.start(hold_slot, ring.name, "renderer-1", holding, never)
    try:
        assert holding.wait(CHILD_START_TIMEOUT_S), "the reader child never took its slot"
        ring.write(make_item(FIELD_DT, 1), timeout_s=0)  # the last free slot
        with pytest.raises(RingTimeoutError, match="renderer-1"):  # full, reader alive
            ring.write(make_item(FIELD_DT, 2), timeout_s=0)
        kill(child, reap)
        with pytest.raises(PeerDiedError) as info:
            ring.write(make_item(FIELD_DT, 2), timeout_s=PEER_DEATH_TIMEOUT_S)
        assert_names_peer(info.value, "renderer-1", child.pid, "reader")
    finally:
        procs.stop(child)
        ring.close()
    token = registry.token
    registry.unlink_all()
    assert [e.name for e in list_entries() if e.token == token] == []


@pytest.mark.timeout(FAULT_TEST_TIMEOUT_S)
@pytest.mark.parametrize("discipline", list(Discipline), ids=lambda d: d.value)
@pytest.mark.parametrize("reap", [False, True], ids=["zombie", "reaped"])
def test_reader_learns_writer_died(registry: Registry, discipline: Discipline,
                                   reap: bool) -> None:
    ring = Ring.create(registry, "dying", FIELD_DT, 4, discipline).bind("reader", "agent-0")
    wrote, never = procs.CTX.Event(), procs.CTX.Event()
    child = procs.start(write_then_hang, ring.name, "sensor-imu", wrote, never)
    try:
        assert wrote.wait(CHILD_START_TIMEOUT_S), "the writer child never wrote"
        assert int(ring.read(timeout_s=0)["x"]) == 1  # what it wrote is still delivered
        kill(child, reap)
        with pytest.raises(PeerDiedError) as info:
            ring.read(timeout_s=PEER_DEATH_TIMEOUT_S)
        assert_names_peer(info.value, "sensor-imu", child.pid, "writer")
    finally:
        procs.stop(child)
        ring.close()
    token = registry.token
    registry.unlink_all()
    assert [e.name for e in list_entries() if e.token == token] == []


def write_close_exit(name: str, count: int) -> None:
    """Child: write ``count`` slots, close the ring and exit at once."""
    ring = Ring.attach(name, side="writer", role="short-lived")
    for key in range(count):
        ring.write(make_item(FIELD_DT, key), timeout_s=CHILD_START_TIMEOUT_S)
    ring.close_writer()
    ring.close()


@pytest.mark.timeout(FAULT_TEST_TIMEOUT_S)
@pytest.mark.parametrize("discipline", [
    Discipline.BLOCKING,
    Discipline.OVERWRITE,
], ids=lambda d: d.value)
def test_reader_after_writer_closed_and_exited(registry: Registry,
                                               discipline: Discipline) -> None:
    ring = Ring.create(registry, "eof", FIELD_DT, 4, discipline).bind("reader")
    child = procs.start(write_close_exit, ring.name, 3)
    try:
        child.join(CHILD_START_TIMEOUT_S)
        assert child.exitcode == 0
        got = [int(ring.read(timeout_s=0, newest=False)["x"]) for _ in range(3)]
        assert got == [0, 1, 2]
        with pytest.raises(RingClosedError):  # a clean end, not a death
            ring.read(timeout_s=PEER_DEATH_TIMEOUT_S)
    finally:
        procs.stop(child)
        ring.close()
