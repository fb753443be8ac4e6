"""Model-based tests of dmxshm.shm.ring: random interleavings of writes and
reads in one process, checked step by step against a pure-Python model.

The model knows, for every write number, whether it was read, dropped or is
still pending, and computes the counters from that; the ring computes them
from three words in shared memory. After every step both must agree, and
``reads + drops + pending == writes``.
"""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from dmxshm.errors import RingClosedError, RingTimeoutError
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Discipline, Ring, RingStats
from tests.shm.slots import FIELD_DT, fill, key_of, make_item

MODEL_SETTINGS = settings(max_examples=100, stateful_step_count=50)
# The writer closes the ring after this many writes (or never: None).
CLOSE_AFTER = st.none() | st.integers(1, 40)


class _RingMachine(RuleBasedStateMachine):
    """Common set-up: a writer and a reader handle on one small ring."""

    discipline: Discipline

    def open(self, nslots: int, close_after: int | None) -> None:
        self.registry = Registry()
        self.writer = Ring.create(self.registry, "model", FIELD_DT, nslots,
                                  self.discipline).bind("writer")
        self.reader = Ring.attach(self.writer.name, side="reader")
        self.nslots = nslots
        self.writes = 0
        self.closed = False
        self.close_after = close_after

    def wrote(self) -> None:
        """Count a write; the writer closes the ring once it wrote enough."""
        self.writes += 1
        if self.writes == self.close_after:
            self.writer.close_writer()
            self.closed = True

    def put(self, zero_copy: bool, timeout_s: float) -> None:
        key = self.writes  # the key is the write number
        if zero_copy:
            with self.writer.writing(timeout_s=timeout_s) as slot:
                fill(slot, key)
        else:
            self.writer.write(make_item(FIELD_DT, key), timeout_s=timeout_s)

    def teardown(self) -> None:
        if hasattr(self, "registry"):
            self.writer.close()
            self.reader.close()
            self.registry.unlink_all()


class OverwriteMachine(_RingMachine):
    discipline = Discipline.OVERWRITE

    @initialize(nslots=st.integers(2, 5), close_after=CLOSE_AFTER)
    def setup(self, nslots: int, close_after: int | None) -> None:
        self.open(nslots, close_after)
        self.read_seq = 0  # the model's next readable write number
        self.read_keys: list[int] = []

    def expected(self, newest: bool) -> int | None:
        if self.writes <= self.read_seq:
            return None
        return self.writes - 1 if newest else max(self.read_seq, self.writes - self.nslots)

    def took(self, got: object, newest: bool) -> None:
        want = self.expected(newest)
        assert want is not None and got is not None
        assert key_of(got) == want  # type: ignore[arg-type]
        self.read_seq = want + 1
        self.read_keys.append(want)

    @precondition(lambda self: not self.closed)
    @rule(zero_copy=st.booleans(), count=st.integers(1, 12))
    def write(self, zero_copy: bool, count: int) -> None:
        # Bursts longer than the ring make the writer lap the reader.
        for _ in range(count):
            if self.closed:
                return
            self.put(zero_copy, timeout_s=0)  # never waits, even with no time at all
            self.wrote()

    @rule(newest=st.booleans())
    def try_read(self, newest: bool) -> None:
        got = self.reader.try_read(newest=newest)
        if self.expected(newest) is None:
            assert got is None
        else:
            self.took(got, newest)

    @rule(newest=st.booleans())
    def read_no_wait(self, newest: bool) -> None:
        if self.expected(newest) is not None:
            self.took(self.reader.read(timeout_s=0, newest=newest), newest)
            return
        with pytest.raises(RingClosedError if self.closed else RingTimeoutError):
            self.reader.read(timeout_s=0, newest=newest)

    @invariant()
    def counters_match_model(self) -> None:
        done = set(self.read_keys)
        oldest_kept = self.writes - self.nslots
        drops = sum(1 for s in range(self.writes)
                    if s not in done and (s < self.read_seq or s < oldest_kept))
        pending = self.writes - max(self.read_seq, oldest_kept, 0)
        want = RingStats(writes=self.writes, reads=len(done), drops=drops, pending=pending)
        for ring in (self.writer, self.reader):
            stats = ring.stats()
            assert stats == want
            assert stats.reads + stats.drops + stats.pending == stats.writes
        assert self.reader.closed is self.closed


class BlockingMachine(_RingMachine):
    discipline = Discipline.BLOCKING

    @initialize(nslots=st.integers(1, 4), close_after=CLOSE_AFTER)
    def setup(self, nslots: int, close_after: int | None) -> None:
        self.open(nslots, close_after)
        self.queue: deque[int] = deque()
        self.reads = 0

    def took(self, got: object) -> None:
        assert got is not None
        assert key_of(got) == self.queue.popleft()  # type: ignore[arg-type]
        self.reads += 1

    def empty_read_error(self) -> type[Exception]:
        return RingClosedError if self.closed else RingTimeoutError

    @precondition(lambda self: not self.closed)
    @rule(zero_copy=st.booleans(), count=st.integers(1, 6))
    def write(self, zero_copy: bool, count: int) -> None:
        for _ in range(count):
            if self.closed:
                return
            if len(self.queue) == self.nslots:
                with pytest.raises(RingTimeoutError):
                    self.put(zero_copy, timeout_s=0)
                return
            self.put(zero_copy, timeout_s=0)
            self.queue.append(self.writes)
            self.wrote()

    @rule()
    def try_read(self) -> None:
        got = self.reader.try_read()
        if self.queue:
            self.took(got)
        else:
            assert got is None

    @rule()
    def read_no_wait(self) -> None:
        if self.queue:
            self.took(self.reader.read(timeout_s=0))
            return
        with pytest.raises(self.empty_read_error()):
            self.reader.read(timeout_s=0)

    @rule()
    def read_in_place(self) -> None:
        if not self.queue:
            with pytest.raises(self.empty_read_error()), self.reader.reading(timeout_s=0):
                pass
            return
        with self.reader.reading(timeout_s=0) as slot:
            assert key_of(slot) == self.queue[0]
        self.queue.popleft()
        self.reads += 1

    @invariant()
    def counters_match_model(self) -> None:
        want = RingStats(writes=self.writes, reads=self.reads, drops=0, pending=len(self.queue))
        for ring in (self.writer, self.reader):
            assert ring.stats() == want
        assert self.reads + len(self.queue) == self.writes


def test_overwrite_ring_matches_model() -> None:
    run_state_machine_as_test(OverwriteMachine, settings=MODEL_SETTINGS)


def test_blocking_ring_matches_model() -> None:
    run_state_machine_as_test(BlockingMachine, settings=MODEL_SETTINGS)
