"""Tests of dmxshm.shm.fence: the memory-ordering primitive of the seqlock."""

from __future__ import annotations

import os

from dmxshm.shm import fence
from dmxshm.shm.names import SHM_DIR


def test_machine_classification() -> None:
    # x86-64 is TSO: the seqlock needs no fence there, and any other CPU does.
    assert fence.NEEDS_FENCE is (fence.MACHINE not in fence._TSO_MACHINES)
    assert fence.ORDERING_PRIMITIVE


def test_fence_leaves_nothing_in_dev_shm() -> None:
    before = set(os.listdir(SHM_DIR))
    for _ in range(3):
        fence.fence()  # works whatever the machine, and twice in a row
    assert not {f for f in set(os.listdir(SHM_DIR)) - before if "dmxfence" in f}
    sem = fence._private_semaphore()
    assert sem is fence._private_semaphore()  # one per process
    assert sem.value == 0
