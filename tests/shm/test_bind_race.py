"""Two processes can never both take one side of a ring (or one barrier party).

Racer processes, spawned once, all try to take the same side of a new ring
(or the same party of a new barrier) each round. Each racer is held at the
claim line, right after it has looked up who it is (``peers.me``) and before
it writes its record, until every racer is there: a check-then-set claim lets
them all through, so the test does not depend on how the scheduler happens
to interleave them. Exactly one must win; every other one gets the error
that names the winner, its pid and its role. The racers stay alive through
the test, so the winner is a live holder when the others look.
"""

from __future__ import annotations

import os
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier as ClaimLine
from typing import Any

import pytest

import dmxshm.shm.barrier as barrier_module
import dmxshm.shm.ring as ring_module
from dmxshm.errors import DmxError
from dmxshm.shm.barrier import Barrier
from dmxshm.shm.peers import Peer
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from tests import procs
from tests.shm.slots import FIELD_DT

RACERS = 4
ROUNDS = 3
# Spawning a child and importing numpy + dmxshm there; generous for slow CI.
CHILD_START_TIMEOUT_S = 30.0
# Bound of one round: attach, the claim line, one claim each.
ROUND_TIMEOUT_S = 30.0

# (what, side): a ring's writer or reader, or party 0 of a barrier.
TARGETS = [("ring", "writer"), ("ring", "reader"), ("barrier", "0")]


def _hold_at_the_claim_line(line: ClaimLine) -> None:
    """Make ``me()`` (called by bind and join before they claim) wait for every racer."""
    real_me = ring_module.me

    def me_at_the_line(role: str) -> Peer:
        record = real_me(role)
        line.wait(ROUND_TIMEOUT_S)
        return record

    ring_module.me = me_at_the_line  # type: ignore[assignment]
    barrier_module.me = me_at_the_line  # type: ignore[assignment]


def racer(index: int, what: str, side: str, names: Queue, results: Queue,
          line: ClaimLine) -> None:
    """Child: for each name until None, take ``side`` of it; report how it went."""
    _hold_at_the_claim_line(line)
    role = f"racer-{index}"
    for name in iter(names.get, None):
        obj: Any = Ring.attach(name) if what == "ring" else Barrier.attach(name)
        try:
            if what == "ring":
                obj.bind(side, role=role)
            else:
                obj.join(int(side), role=role)
            results.put((name, index, os.getpid(), None))
        except DmxError as exc:
            results.put((name, index, os.getpid(), str(exc)))
        finally:
            obj.close()


def _create(registry: Registry, what: str, round_no: int) -> Any:
    if what == "ring":
        return Ring.create(registry, f"race.{round_no}", FIELD_DT, nslots=2)
    return Barrier.create(registry, f"race.{round_no}", parties=2)


@pytest.mark.timeout(CHILD_START_TIMEOUT_S + ROUNDS * ROUND_TIMEOUT_S)
@pytest.mark.parametrize(("what", "side"), TARGETS)
def test_exactly_one_of_many_racing_processes_takes_a_side(
        registry: Registry, what: str, side: str) -> None:
    line = procs.CTX.Barrier(RACERS)
    results: Queue = procs.CTX.Queue()
    queues: list[Queue] = [procs.CTX.Queue() for _ in range(RACERS)]
    children = [procs.start(racer, i, what, side, queues[i], results, line,
                            name=f"racer-{i}") for i in range(RACERS)]
    try:
        for round_no in range(ROUNDS):
            obj = _create(registry, what, round_no)
            try:
                for q in queues:
                    q.put(obj.name)
                bound_s = CHILD_START_TIMEOUT_S if round_no == 0 else ROUND_TIMEOUT_S
                got = [results.get(timeout=bound_s) for _ in range(RACERS)]
                assert {g[0] for g in got} == {obj.name}
                winners = [(index, pid) for _, index, pid, error in got if error is None]
                assert len(winners) == 1, f"round {round_no}: {len(winners)} won: {winners}"
                (index, pid), = winners
                holder = obj.peer(side if what == "ring" else int(side))
                assert (holder.pid, holder.role) == (pid, f"racer-{index}")
                for _, _, _, error in got:
                    if error is not None:
                        assert f"racer-{index} (pid {pid}, alive)" in error
                        assert ("already has a live" if what == "ring"
                                else "is held by a live process") in error
            finally:
                obj.close()
    finally:
        for q in queues:
            q.put(None)
        procs.stop(*children)
        for q in (*queues, results):
            q.close()
            q.join_thread()
