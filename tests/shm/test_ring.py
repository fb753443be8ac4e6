"""Tests of dmxshm.shm.ring in one process (plus one helper child for bind).

Every behaviour is checked for both disciplines and both payloads that
matter: an 8-byte field (state, commands) and a 160x120 RGB frame (camera).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from multiprocessing.synchronize import Event

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmxshm.errors import (
    DmxError,
    DmxTimeoutError,
    LayoutError,
    RingClosedError,
    RingTimeoutError,
    ShmError,
)
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import (
    ALIGN,
    Discipline,
    Ring,
    RingStats,
    count_drops,
    ring_size_bytes,
    round_up,
)
from dmxshm.shm.segment import Segment
from tests import procs
from tests.shm.slots import FIELD_DT, FRAME_DT, PAYLOADS, fill, key_of, make_item

# Reads and writes that must succeed at once still get a generous bound, so a
# bug shows as an error, not as a hang.
PROMPT_S = 5.0
# What an empty/full ring is given before it must time out.
SHORT_TIMEOUT_S = 0.2
# How long a helper child may take to start (spawn + imports) and answer.
CHILD_START_TIMEOUT_S = 30.0

DISCIPLINES = [Discipline.BLOCKING, Discipline.OVERWRITE]
both_disciplines = pytest.mark.parametrize("discipline", DISCIPLINES, ids=lambda d: d.value)
both_payloads = pytest.mark.parametrize("dtype", list(PAYLOADS.values()), ids=list(PAYLOADS))

MakePair = Callable[..., tuple[Ring, Ring]]


@pytest.fixture
def make_pair(registry: Registry) -> Iterator[MakePair]:
    """Build (writer, reader) handles of a new ring, both in this process."""
    opened: list[Ring] = []

    def make(dtype: np.dtype = FIELD_DT, nslots: int = 4,
             discipline: Discipline | str = Discipline.BLOCKING,
             writer_role: str | None = None, reader_role: str | None = None,
             ) -> tuple[Ring, Ring]:
        writer = Ring.create(registry, f"ring.{len(opened)}", dtype, nslots, discipline)
        opened.append(writer)
        writer.bind("writer", writer_role)
        reader = Ring.attach(writer.name, side="reader", role=reader_role)
        opened.append(reader)
        return writer, reader

    yield make
    for ring in opened:
        ring.close()


def read_one(reader: Ring, newest: bool = False) -> int:
    return key_of(reader.read(timeout_s=PROMPT_S, newest=newest))


# -- layout helpers ------------------------------------------------------------

@settings(max_examples=40)
@given(nslots=st.integers(2, 9), writes=st.integers(0, 40))
def test_writes_wrap_around_the_slots(nslots: int, writes: int) -> None:
    # Write k lands in slot k % nslots: after any number of writes, each slot
    # holds the newest write of its residue class, with its seqlock word.
    with Registry() as reg:
        ring = Ring.create(reg, "wrap", FIELD_DT, nslots, "overwrite").bind("writer")
        for k in range(writes):
            ring.write(make_item(FIELD_DT, k))
        for i in range(nslots):
            held = [k for k in range(writes) if k % nslots == i]
            if held:
                assert key_of(ring.slots[i]) == held[-1]
                assert ring._seqs[i] == 2 * held[-1] + 2
            else:
                assert ring._seqs[i] == 0
        ring.close()


@given(nslots=st.integers(2, 2**16), reads=st.integers(0, 2**40),
       skipped=st.integers(0, 2**40), unread=st.integers(0, 2**40))
def test_count_drops_accounts_for_every_write(
        nslots: int, reads: int, skipped: int, unread: int) -> None:
    read_seq = reads + skipped
    write_seq = read_seq + unread
    drops = count_drops(write_seq, read_seq, reads, nslots)
    pending = min(nslots, write_seq - read_seq)
    assert drops >= skipped
    assert reads + drops + pending == write_seq
    if unread <= nslots:  # nothing overwritten yet: only skips are lost
        assert drops == skipped
    # one more write loses at most one more slot, never gives one back
    assert drops <= count_drops(write_seq + 1, read_seq, reads, nslots) <= drops + 1


@given(n=st.integers(0, 10**6), align=st.sampled_from([1, 8, 64, 4096]))
def test_round_up(n: int, align: int) -> None:
    m = round_up(n, align)
    assert m % align == 0 and n <= m < n + align


@pytest.mark.parametrize("nslots", [1, 3, 64])
@both_payloads
def test_ring_size_fits_slots_aligned(dtype: np.dtype, nslots: int) -> None:
    size = ring_size_bytes(dtype, nslots)
    assert size >= 2048 + 8 * nslots + nslots * dtype.itemsize
    assert (size - nslots * round_up(dtype.itemsize)) % ALIGN == 0


# -- creation ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.uint8, np.dtype((np.uint8, (4,))), "S8"],
                         ids=["f8", "u1", "u1x4", "S8"])
def test_non_structured_dtype_rejected(registry: Registry, dtype: object) -> None:
    with pytest.raises(ValueError, match="structured"):
        Ring.create(registry, "bad", dtype, 4)
    assert registry.names == []


def test_object_dtype_rejected(registry: Registry) -> None:
    with pytest.raises(ValueError, match="objects"):
        Ring.create(registry, "bad", [("o", object)], 4)


def test_huge_dtype_description_rejected(registry: Registry) -> None:
    dtype = np.dtype([(f"field_{i:04d}", "<f8") for i in range(200)])
    with pytest.raises(ValueError, match="too long"):
        Ring.create(registry, "bad", dtype, 4)


@pytest.mark.parametrize(("discipline", "nslots"),
                         [("overwrite", 1), ("overwrite", 0), ("blocking", 0), ("blocking", -1)])
def test_too_few_slots_rejected(registry: Registry, discipline: str, nslots: int) -> None:
    with pytest.raises(ValueError, match="at least"):
        Ring.create(registry, "bad", FIELD_DT, nslots, discipline)
    assert registry.names == []


def test_single_slot_blocking_ring_allowed(make_pair: MakePair) -> None:
    writer, reader = make_pair(nslots=1)
    for key in range(3):
        writer.write(make_item(FIELD_DT, key), timeout_s=PROMPT_S)
        assert read_one(reader) == key


def test_unknown_discipline_rejected(registry: Registry) -> None:
    with pytest.raises(ValueError):
        Ring.create(registry, "bad", FIELD_DT, 4, "sometimes")


@pytest.mark.parametrize("dtype", [
    np.dtype([("a", "<f8"), ("b", [("c", ">i4"), ("d", "u1", (2, 3))]), ("s", "S5")]),
    np.dtype([("a", "u1"), ("b", "<f8")], align=True),
    np.dtype([("t", "<M8[ns]"), ("c", "<c16"), ("ok", "?"), ("u", "<U3")]),
    FRAME_DT,
], ids=["nested", "aligned", "exotic", "frame"])
def test_attach_rebuilds_dtype(registry: Registry, dtype: np.dtype) -> None:
    ring = Ring.create(registry, "dt", dtype, 3, "overwrite")
    with Ring.attach(ring.name) as attached:
        assert attached.dtype == dtype
        assert attached.dtype.itemsize == dtype.itemsize
        assert (attached.nslots, attached.discipline, attached.stride) == (
            3, Discipline.OVERWRITE, round_up(dtype.itemsize))
    ring.close()


def test_attach_rejects_corrupt_header(registry: Registry) -> None:
    ring = Ring.create(registry, "corrupt", FIELD_DT, 2)
    with Segment.attach(ring.name) as seg:
        seg.ndarray(np.uint64, (1,))[0] = 0  # the magic word
    with pytest.raises(LayoutError, match="not a dmxshm ring"):
        Ring.attach(ring.name)
    ring.close()


def test_attach_rejects_plain_segment(registry: Registry) -> None:
    seg = registry.create_segment("plain", 4096)
    try:
        with pytest.raises(LayoutError):
            Ring.attach(seg.name)
    finally:
        seg.close()


def test_bind_rejects_unknown_side(make_pair: MakePair) -> None:
    writer, _ = make_pair()
    with pytest.raises(ValueError, match="side"):
        writer.bind("spectator")


def test_bind_records_role_and_pid(make_pair: MakePair) -> None:
    writer, reader = make_pair(writer_role="engine", reader_role="renderer-1")
    for ring in (writer, reader):
        assert (ring.peer("writer").role, ring.peer("writer").pid) == ("engine", os.getpid())
        assert (ring.peer("reader").role, ring.peer("reader").pid) == ("renderer-1", os.getpid())
    writer.bind("writer", "engine")  # rebinding one's own side is fine
    assert writer.side == "writer" and reader.side == "reader"


def hold_side(name: str, side: str, role: str, bound: Event, release: Event) -> None:
    """Child: take ``side`` of ring ``name`` and keep it until ``release``."""
    ring = Ring.attach(name, side=side, role=role)
    bound.set()
    release.wait(CHILD_START_TIMEOUT_S)
    ring.close()


@pytest.mark.timeout(2 * CHILD_START_TIMEOUT_S)
@pytest.mark.parametrize("side", ["writer", "reader"])
def test_bind_side_held_by_live_process_raises(registry: Registry, side: str) -> None:
    ring = Ring.create(registry, "held", FIELD_DT, 2)
    bound, release = procs.CTX.Event(), procs.CTX.Event()
    child = procs.start(hold_side, ring.name, side, f"{side}-child", bound, release)
    try:
        assert bound.wait(CHILD_START_TIMEOUT_S), "child never bound"
        with pytest.raises(DmxError, match=f"already has a live {side}") as info:
            ring.bind(side)
        assert f"pid {child.pid}" in str(info.value) and f"{side}-child" in str(info.value)
        release.set()
        child.join(CHILD_START_TIMEOUT_S)
        assert child.exitcode == 0
        ring.bind(side)  # its holder is dead: the side can be taken over
        assert ring.peer(side).role == side
    finally:
        procs.stop(child)
        ring.close()


# -- data path -----------------------------------------------------------------

@both_disciplines
@both_payloads
def test_round_trip_keeps_order(make_pair: MakePair, discipline: Discipline,
                                dtype: np.dtype) -> None:
    writer, reader = make_pair(dtype, nslots=3, discipline=discipline)
    keys = list(range(100, 103))
    for key in keys:
        writer.write(make_item(dtype, key), timeout_s=PROMPT_S)
    got = [reader.read(timeout_s=PROMPT_S, newest=False) for _ in keys]
    assert [key_of(g) for g in got] == keys
    assert all(g.dtype == dtype and g.shape == () for g in got)
    assert reader.try_read() is None
    # Many laps of one write, one read: every slot is reused, nothing is stale.
    for key in range(10 * 3 + 1):
        writer.write(make_item(dtype, key), timeout_s=PROMPT_S)
        assert read_one(reader, newest=True) == key
    assert reader.stats() == RingStats(writes=34, reads=34, drops=0, pending=0)


@both_disciplines
@both_payloads
def test_read_returns_independent_copy(make_pair: MakePair, discipline: Discipline,
                                       dtype: np.dtype) -> None:
    writer, reader = make_pair(dtype, nslots=2, discipline=discipline)
    writer.write(make_item(dtype, 1))
    first = reader.read(timeout_s=PROMPT_S)
    assert not np.shares_memory(first, reader.slots)
    for key in (2, 3):  # both slots rewritten
        writer.write(make_item(dtype, key), timeout_s=PROMPT_S)
    assert key_of(first) == 1
    fill(first, 99)  # and scribbling on the copy leaves the ring alone
    assert read_one(reader) == 2 and read_one(reader) == 3


@both_disciplines
@both_payloads
def test_zero_copy_writing(make_pair: MakePair, discipline: Discipline, dtype: np.dtype) -> None:
    writer, reader = make_pair(dtype, nslots=2, discipline=discipline)
    for key in range(5):
        with writer.writing(timeout_s=PROMPT_S) as slot:
            assert np.shares_memory(slot, writer.slots) and slot.shape == ()
            fill(slot, key)
            assert reader.try_read() is None, "published before the block ended"
        assert read_one(reader) == key


@both_payloads
def test_zero_copy_reading_holds_the_slot(make_pair: MakePair, dtype: np.dtype) -> None:
    writer, reader = make_pair(dtype, nslots=1)
    writer.write(make_item(dtype, 7))
    with reader.reading(timeout_s=PROMPT_S) as slot:
        assert np.shares_memory(slot, reader.slots)
        assert key_of(slot) == 7
        with pytest.raises(RingTimeoutError):  # the writer cannot reuse it yet
            writer.write(make_item(dtype, 8), timeout_s=0)
        assert reader.stats().reads == 0
    assert reader.stats() == RingStats(writes=1, reads=1, drops=0, pending=0)
    writer.write(make_item(dtype, 8), timeout_s=0)
    assert read_one(reader) == 8


def test_zero_copy_reading_needs_blocking(make_pair: MakePair) -> None:
    writer, reader = make_pair(discipline="overwrite")
    writer.write(make_item(FIELD_DT, 1))
    with pytest.raises(ShmError, match="blocking"), reader.reading():
        pass
    assert read_one(reader) == 1  # nothing was consumed


@both_payloads
def test_overwrite_reads_newest(make_pair: MakePair, dtype: np.dtype) -> None:
    writer, reader = make_pair(dtype, nslots=4, discipline="overwrite")
    for key in range(10):
        writer.write(make_item(dtype, key))
    assert read_one(reader, newest=True) == 9
    assert reader.try_read(newest=True) is None
    assert reader.stats() == RingStats(writes=10, reads=1, drops=9, pending=0)
    for key in (10, 11):
        writer.write(make_item(dtype, key))
    assert read_one(reader, newest=True) == 11  # 10 skipped: a drop
    assert writer.stats() == RingStats(writes=12, reads=2, drops=10, pending=0)


@both_payloads
def test_overwrite_oldest_available(make_pair: MakePair, dtype: np.dtype) -> None:
    writer, reader = make_pair(dtype, nslots=4, discipline="overwrite")
    for key in range(10):
        writer.write(make_item(dtype, key))
    assert writer.stats() == RingStats(writes=10, reads=0, drops=6, pending=4)
    assert read_one(reader) == 6  # 0..5 were overwritten
    assert reader.stats() == RingStats(writes=10, reads=1, drops=6, pending=3)
    assert [read_one(reader) for _ in range(3)] == [7, 8, 9]
    assert reader.try_read(newest=False) is None
    assert reader.stats() == RingStats(writes=10, reads=4, drops=6, pending=0)


def test_overwrite_skipping_counts_drops_without_overwrite(make_pair: MakePair) -> None:
    writer, reader = make_pair(nslots=8, discipline="overwrite")
    for key in range(3):
        writer.write(make_item(FIELD_DT, key))
    assert writer.stats().drops == 0  # nothing lost yet: all three are readable
    assert read_one(reader, newest=True) == 2
    assert writer.stats() == RingStats(writes=3, reads=1, drops=2, pending=0)


def test_overwrite_writer_never_waits(make_pair: MakePair) -> None:
    writer, _ = make_pair(nslots=2, discipline="overwrite")
    for key in range(1000):  # no reader reads: a blocking ring would time out
        writer.write(make_item(FIELD_DT, key), timeout_s=0)
    assert writer.stats() == RingStats(writes=1000, reads=0, drops=998, pending=2)


def test_blocking_stats(make_pair: MakePair) -> None:
    writer, reader = make_pair(nslots=4)
    for key in range(3):
        writer.write(make_item(FIELD_DT, key))
    read_one(reader)
    assert writer.stats() == RingStats(writes=3, reads=1, drops=0, pending=2)


@both_disciplines
@both_payloads
def test_closed_once_drained(make_pair: MakePair, discipline: Discipline,
                             dtype: np.dtype) -> None:
    writer, reader = make_pair(dtype, nslots=4, discipline=discipline)
    for key in range(3):
        writer.write(make_item(dtype, key), timeout_s=PROMPT_S)
    assert not reader.closed
    writer.close_writer()
    assert writer.closed and reader.closed
    assert [read_one(reader) for _ in range(3)] == [0, 1, 2]  # still delivered
    for _ in range(2):  # and every later read says so too
        with pytest.raises(RingClosedError, match="closed") as info:
            reader.read(timeout_s=PROMPT_S)
        assert isinstance(info.value, EOFError)
    assert reader.try_read() is None


def test_overwrite_closed_after_newest(make_pair: MakePair) -> None:
    writer, reader = make_pair(nslots=4, discipline="overwrite")
    for key in range(3):
        writer.write(make_item(FIELD_DT, key))
    writer.close_writer()
    assert read_one(reader, newest=True) == 2
    with pytest.raises(RingClosedError):
        reader.read(timeout_s=PROMPT_S)


@both_disciplines
@both_payloads
def test_read_times_out_on_empty_ring(make_pair: MakePair, discipline: Discipline,
                                      dtype: np.dtype) -> None:
    writer, reader = make_pair(dtype, discipline=discipline, writer_role="cam-writer-7")
    with pytest.raises(RingTimeoutError) as info:
        reader.read(timeout_s=SHORT_TIMEOUT_S)
    err = info.value
    assert isinstance(err, DmxTimeoutError) and isinstance(err, TimeoutError)
    assert "cam-writer-7" in str(err) and "writer" in str(err) and reader.name in str(err)
    assert reader.stats().reads == 0
    writer.write(make_item(dtype, 1))  # the ring still works after a timeout
    assert read_one(reader) == 1


def test_read_timeout_without_writer_says_so(registry: Registry) -> None:
    ring = Ring.create(registry, "nowriter", FIELD_DT, 2).bind("reader")
    with pytest.raises(RingTimeoutError, match="not attached yet"):
        ring.read(timeout_s=SHORT_TIMEOUT_S)
    ring.close()


def test_full_blocking_write_times_out_naming_reader(make_pair: MakePair) -> None:
    writer, reader = make_pair(nslots=2, reader_role="planner")
    writer.write(make_item(FIELD_DT, 0))
    writer.write(make_item(FIELD_DT, 1))
    with pytest.raises(RingTimeoutError, match="planner"):
        writer.write(make_item(FIELD_DT, 2), timeout_s=SHORT_TIMEOUT_S)
    with pytest.raises(RingTimeoutError, match="planner"), writer.writing(timeout_s=0):
        pass
    assert [read_one(reader) for _ in range(2)] == [0, 1]  # nothing half-written
    assert reader.try_read() is None


@both_disciplines
@both_payloads
def test_attach_by_name_sees_same_data(registry: Registry, discipline: Discipline,
                                       dtype: np.dtype) -> None:
    writer = Ring.create(registry, "shared", dtype, 3, discipline).bind("writer")
    with Ring.attach(writer.name, side="reader") as reader:
        assert (reader.name, reader.discipline, reader.nslots, reader.dtype) == (
            writer.name, writer.discipline, writer.nslots, writer.dtype)
        for key in (5, 6):
            writer.write(make_item(dtype, key), timeout_s=PROMPT_S)
        assert reader.stats() == writer.stats()
        assert [read_one(reader) for _ in range(2)] == [5, 6]
        assert writer.stats().reads == 2  # the writer sees the reader's progress
        assert repr(reader) == repr(writer)
    writer.close()


def test_exception_in_writing_does_not_lose_a_slot(make_pair: MakePair) -> None:
    writer, reader = make_pair(nslots=1)
    with pytest.raises(RuntimeError), writer.writing(timeout_s=PROMPT_S):
        raise RuntimeError("the renderer failed")
    writer.write(make_item(FIELD_DT, 1), timeout_s=0)  # RingTimeoutError: the slot is gone
    assert read_one(reader) == 1


def test_oldest_read_while_writer_inside_writing(make_pair: MakePair) -> None:
    writer, reader = make_pair(nslots=2, discipline="overwrite")
    for key in range(3):  # slots hold 1 and 2; the next write goes where 1 is
        writer.write(make_item(FIELD_DT, key))
    with writer.writing() as slot:
        fill(slot, 3)
        got = reader.try_read(newest=False)  # 1 is being overwritten: 2 is the oldest whole
        assert got is not None and key_of(got) == 2
