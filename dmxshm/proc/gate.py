"""The start gate: every process of a run waits there until all are set up.

A child builds what it needs (its worlds, its rings) and then waits at the
run's start barrier (:class:`~dmxshm.shm.barrier.Barrier`), so that the
run's clock starts only when every process is ready, and a child that dies
while starting breaks the barrier for the others instead of leaving them
waiting.
"""

from __future__ import annotations

from dmxshm.settings import START_TIMEOUT_S
from dmxshm.shm.barrier import Barrier


def wait_for_start(barrier: str, party: int, role: str,
                   timeout_s: float = START_TIMEOUT_S) -> None:
    """Wait at the start barrier named ``barrier`` as ``party``.

    Raises:
        BarrierTimeoutError: not every party came within ``timeout_s``; names who.
        PeerDiedError: a party died while the others waited.
    """
    gate = Barrier.attach(barrier, party=party, role=role)
    try:
        gate.wait(timeout_s)
    finally:
        gate.close()
