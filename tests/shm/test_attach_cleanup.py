"""A failed attach leaves nothing open: no semaphore handle, no mapping.

posix_ipc never closes a semaphore when its Python object is collected (its
``sem_close`` would cut every thread of the process off it), so a handle that
an attach opened and then dropped on an error stays mapped for the life of
the process. The attach is tried in a fresh spawned child, which holds no
other handle of the objects: its ``/proc/self/maps`` then shows exactly what
the failed attach left behind (glibc maps each open semaphore, as
``/dev/shm/sem.<name>``, until ``sem_close``).
"""

from __future__ import annotations

import gc
from multiprocessing.connection import Connection

import posix_ipc
import pytest

from dmxshm.errors import SegmentMissingError
from dmxshm.shm.barrier import Barrier
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from tests import procs
from tests.shm.slots import FIELD_DT

# Spawning a child and importing numpy + dmxshm there; generous for slow CI.
CHILD_START_TIMEOUT_S = 30.0


def attach_and_report_maps(kind: str, name: str, conn: Connection) -> None:
    """Child: attach ``name`` (it must fail), then send what of it is still mapped."""
    attach = Ring.attach if kind == "ring" else Barrier.attach
    try:
        attach(name)
    except SegmentMissingError as exc:
        failure = str(exc)
    else:
        failure = "attach succeeded"
    gc.collect()  # what is only garbage now is no leak: let it go first
    file_part = name.lstrip("/")  # the segment's file and its semaphores' (sem.<name>.*)
    with open("/proc/self/maps") as maps:
        mapped = [line.split(maxsplit=5)[-1].strip() for line in maps if file_part in line]
    conn.send((failure, mapped))


def _created(registry: Registry, kind: str) -> tuple[str, list[str]]:
    """A new ring or barrier: its name and its semaphores, in the order attach opens them."""
    if kind == "ring":
        ring = Ring.create(registry, "leak", FIELD_DT, nslots=2)  # blocking: free, filled
        ring.close()
        return ring.name, [f"{ring.name}.free", f"{ring.name}.filled"]
    barrier = Barrier.create(registry, "leak", parties=2)
    barrier.close()
    return barrier.name, [f"{barrier.name}.{k}" for k in ("mutex", "gate0", "gate1")]


@pytest.mark.timeout(2 * CHILD_START_TIMEOUT_S)
@pytest.mark.parametrize("kind", ["ring", "barrier"])
def test_an_attach_that_misses_its_last_semaphore_closes_the_others(
        registry: Registry, kind: str) -> None:
    name, sems = _created(registry, kind)
    posix_ipc.unlink_semaphore(sems[-1])  # the first ones open, then the last is missing
    parent_end, child_end = procs.CTX.Pipe(duplex=False)
    child = procs.start(attach_and_report_maps, kind, name, child_end)
    try:
        child_end.close()
        assert parent_end.poll(CHILD_START_TIMEOUT_S), "the child never reported"
        failure, mapped = parent_end.recv()
    finally:
        procs.stop(child)
        parent_end.close()
    assert sems[-1] in failure and "does not exist" in failure
    assert mapped == [], f"the failed attach left these mapped: {mapped}"
