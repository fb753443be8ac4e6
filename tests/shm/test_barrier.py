"""Tests of dmxshm.shm.barrier, in one process and across spawned children.

Children report how their waits ended through a pipe; the parent decides.
A child that is killed or stopped on purpose is always killed, continued and
reaped in a ``finally``.
"""

from __future__ import annotations

import os
import signal
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event

import numpy as np
import pytest

from dmxshm.errors import (
    BarrierTimeoutError,
    BrokenBarrierError,
    DmxError,
    DmxTimeoutError,
    PeerDiedError,
    SegmentMissingError,
)
from dmxshm.shm.barrier import Barrier
from dmxshm.shm.names import make_name, new_token
from dmxshm.shm.registry import Registry
from dmxshm.shm.segment import Segment
from tests import procs

# Spawning a child and importing numpy + dmxshm there; generous for slow CI.
CHILD_START_TIMEOUT_S = 30.0
# Bound of a barrier wait whose peers are alive and coming.
BARRIER_WAIT_S = 30.0
# What a wait is given when a party will not come (it must time out).
SHORT_TIMEOUT_S = 0.3
# Bound of a wait that must end early with PeerDiedError (a liveness poll is 50 ms).
PEER_DEATH_TIMEOUT_S = 20.0
TEST_TIMEOUT_S = 120
GENERATIONS = 25
PARTIES = 3  # the parent and two children


# -- one process ---------------------------------------------------------------

def test_single_party_opens_at_once(registry: Registry) -> None:
    with Barrier.create(registry, "one", parties=1) as barrier:
        barrier.join(0, "engine")
        assert [barrier.wait(timeout_s=0) for _ in range(4)] == [0, 1, 2, 3]
        assert barrier.generation == 4 and not barrier.broken


@pytest.mark.parametrize("parties", [0, -1])
def test_needs_a_party(registry: Registry, parties: int) -> None:
    with pytest.raises(ValueError, match="at least one"):
        Barrier.create(registry, "none", parties=parties)
    assert registry.names == []


@pytest.mark.parametrize("party", [-1, 2])
def test_join_checks_party(registry: Registry, party: int) -> None:
    with Barrier.create(registry, "two", parties=2) as barrier, \
            pytest.raises(ValueError, match="party"):
        barrier.join(party)


def test_wait_before_join_raises(registry: Registry) -> None:
    with Barrier.create(registry, "unjoined", parties=1) as barrier, \
            pytest.raises(DmxError, match="join"):
        barrier.wait()


def test_attach_sees_joined_parties(registry: Registry) -> None:
    with Barrier.create(registry, "roles", parties=2) as barrier:
        barrier.join(0, "engine")
        with Barrier.attach(barrier.name, party=1, role="renderer-1") as other:
            assert other.parties == 2 and other.generation == 0
            for handle in (barrier, other):
                assert (handle.peer(0).role, handle.peer(0).pid) == ("engine", os.getpid())
                assert handle.peer(1).role == "renderer-1"
        assert Barrier.attach(barrier.name).peer(1).role == "renderer-1"


def test_unjoined_party_is_described(registry: Registry) -> None:
    with Barrier.create(registry, "roles", parties=2) as barrier:
        assert barrier.peer(1).pid == 0
        assert barrier.peer(1).describe() == "party-1 (not attached yet)"


def test_attach_missing_raises() -> None:
    with pytest.raises(SegmentMissingError, match="RemoveIPC"):
        Barrier.attach(make_name(new_token(), "nobarrier"))


def test_timeout_names_absent_party_and_breaks(registry: Registry) -> None:
    with Barrier.create(registry, "absent", parties=2) as barrier:
        barrier.join(0, "engine")
        with pytest.raises(BarrierTimeoutError) as info:
            barrier.wait(timeout_s=SHORT_TIMEOUT_S)
        assert isinstance(info.value, DmxTimeoutError) and isinstance(info.value, TimeoutError)
        assert "party-1 (not attached yet)" in str(info.value)
        assert "engine" not in str(info.value)  # it arrived: it is not blamed
        assert barrier.broken
        with pytest.raises(BrokenBarrierError):
            barrier.wait(timeout_s=BARRIER_WAIT_S)


def test_abort_breaks(registry: Registry) -> None:
    with Barrier.create(registry, "abort", parties=1) as barrier:
        barrier.join(0)
        barrier.wait()
        barrier.abort()
        assert barrier.broken
        with pytest.raises(BrokenBarrierError, match="broken"):
            barrier.wait(timeout_s=BARRIER_WAIT_S)


# -- several processes ---------------------------------------------------------

def count_generations(name: str, counts_name: str, party: int, generations: int) -> None:
    """Child: pass ``generations`` generations, checking that nobody ran ahead."""
    barrier = Barrier.attach(name, party=party, role=f"party-{party}-child")
    counts = Segment.attach(counts_name)
    run_generations(barrier, counts, party, generations)
    barrier.close()
    counts.close()


def run_generations(barrier: Barrier, counts: Segment, party: int, generations: int) -> None:
    arrived = counts.ndarray(np.int64, (barrier.parties,))
    for gen in range(generations):
        arrived[party] = gen + 1
        assert barrier.wait(timeout_s=BARRIER_WAIT_S) == gen
        # Everyone has arrived at gen; nobody can be past gen + 1.
        assert arrived.min() >= gen + 1, arrived.tolist()
        assert arrived.max() <= gen + 2, arrived.tolist()
    del arrived


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_parties_pass_generations_together(registry: Registry) -> None:
    barrier = Barrier.create(registry, "gens", parties=PARTIES).join(0, "parent")
    counts = registry.create_segment("gens.counts", 8 * PARTIES)
    children = [procs.start(count_generations, barrier.name, counts.name, p, GENERATIONS)
                for p in range(1, PARTIES)]
    try:
        run_generations(barrier, counts, 0, GENERATIONS)
        for child in children:
            child.join(CHILD_START_TIMEOUT_S)
        assert [c.exitcode for c in children] == [0] * len(children)
        assert barrier.generation == GENERATIONS and not barrier.broken
    finally:
        procs.stop(*children)
        barrier.close()
        counts.close()


def join_and_hang(name: str, party: int, role: str, joined: Event, never: Event) -> None:
    """Child: join the barrier, then never arrive."""
    barrier = Barrier.attach(name, party=party, role=role)
    joined.set()
    never.wait(BARRIER_WAIT_S * 3)
    barrier.close()


def wait_and_report(name: str, party: int, timeout_s: float, joined: Event,
                    out: Connection) -> None:
    """Child: join, wait once, and send back how the wait ended."""
    barrier = Barrier.attach(name, party=party, role=f"party-{party}-waiter")
    joined.set()
    try:
        out.send(("returned", barrier.wait(timeout_s=timeout_s), None, None))
    except DmxError as err:
        out.send((type(err).__name__, str(err), getattr(err, "role", None),
                  getattr(err, "pid", None)))
    barrier.close()


def outcome_of(conn: Connection) -> tuple:
    assert conn.poll(BARRIER_WAIT_S + CHILD_START_TIMEOUT_S), "the waiting child never answered"
    return conn.recv()


@pytest.mark.timeout(TEST_TIMEOUT_S)
@pytest.mark.parametrize("reap", [False, True], ids=["zombie", "reaped"])
def test_killed_party_is_named(registry: Registry, reap: bool) -> None:
    barrier = Barrier.create(registry, "killed", parties=PARTIES).join(0, "parent")
    joined = [procs.CTX.Event() for _ in range(2)]
    never = procs.CTX.Event()
    recv, send = procs.CTX.Pipe(duplex=False)
    waiter = procs.start(wait_and_report, barrier.name, 1, PEER_DEATH_TIMEOUT_S, joined[0], send)
    victim = procs.start(join_and_hang, barrier.name, 2, "renderer-2", joined[1], never)
    try:
        assert all(j.wait(CHILD_START_TIMEOUT_S) for j in joined), "a child never joined"
        os.kill(victim.pid, signal.SIGKILL)
        if reap:
            victim.join(CHILD_START_TIMEOUT_S)
        with pytest.raises((PeerDiedError, BrokenBarrierError)) as info:
            barrier.wait(timeout_s=PEER_DEATH_TIMEOUT_S)
        err = info.value
        outcomes = [(type(err).__name__, str(err), getattr(err, "role", None),
                     getattr(err, "pid", None)), outcome_of(recv)]
        # Whoever saw the death first names the victim and breaks the barrier;
        # the other may instead be woken by that break.
        kinds = [o[0] for o in outcomes]
        assert set(kinds) <= {"PeerDiedError", "BrokenBarrierError"}, outcomes
        assert "PeerDiedError" in kinds, outcomes
        for kind, message, role, pid in outcomes:
            if kind == "PeerDiedError":
                assert (role, pid) == ("renderer-2", victim.pid)
                assert "renderer-2" in message and f"pid {victim.pid}" in message
        assert barrier.broken
    finally:
        procs.stop(waiter, victim)
        recv.close()
        send.close()
        barrier.close()


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_stopped_party_is_named_on_timeout(registry: Registry) -> None:
    barrier = Barrier.create(registry, "stopped", parties=PARTIES).join(0, "parent")
    joined = [procs.CTX.Event() for _ in range(2)]
    never = procs.CTX.Event()
    recv, send = procs.CTX.Pipe(duplex=False)
    # The other waiter would wait far longer than the parent: the parent's
    # timeout breaks the barrier, which must wake it with BrokenBarrierError.
    waiter = procs.start(wait_and_report, barrier.name, 1, BARRIER_WAIT_S, joined[0], send)
    sleeper = procs.start(join_and_hang, barrier.name, 2, "renderer-2", joined[1], never,
                          own=True)  # waited for, stopped
    try:
        assert all(j.wait(CHILD_START_TIMEOUT_S) for j in joined), "a child never joined"
        os.kill(sleeper.pid, signal.SIGSTOP)
        _, status = os.waitpid(sleeper.pid, os.WUNTRACED)  # returns once it is stopped
        assert os.WIFSTOPPED(status)
        with pytest.raises(BarrierTimeoutError) as info:
            barrier.wait(timeout_s=SHORT_TIMEOUT_S)
        message = str(info.value)
        assert f"renderer-2 (pid {sleeper.pid}, stopped)" in message, message
        assert "parent" not in message.split("not arrived:")[1]
        assert outcome_of(recv)[0] == "BrokenBarrierError"
        assert barrier.broken
    finally:
        procs.stop(waiter, sleeper)
        recv.close()
        send.close()
        barrier.close()
