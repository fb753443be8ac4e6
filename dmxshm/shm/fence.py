"""Memory ordering for the overwrite (seqlock) discipline.

The seqlock in :mod:`dmxshm.shm.ring` needs two orderings: the writer's
stores must become visible in program order (sequence number, then payload,
then sequence number again), and the reader's loads must happen in program
order (sequence, payload, sequence).

* **x86-64** is TSO: the CPU never reorders a store with an earlier store,
  nor a load with an earlier load. Each step of the seqlock is a separate
  call into C (numpy, memoryview) made by the interpreter, which the C
  compiler cannot move code across. So no fence instruction is needed and
  :func:`fence` is not called (``NEEDS_FENCE`` is False).
* **aarch64** (and any other architecture) may reorder both. There
  :func:`fence` posts then try-waits a process-private POSIX semaphore.
  POSIX.1-2017 section 4.12 ("Memory Synchronization") lists ``sem_post`` and
  ``sem_trywait`` among the functions that synchronize memory; glibc
  implements them as a release and an acquire read-modify-write on the same
  word, and on ARMv8 a store-release followed by a load-acquire is ordered
  (RCsc), so the pair is a full barrier for the accesses around it.

The blocking discipline needs none of this: every handoff goes through
``sem_post``/``sem_wait`` on the shared semaphores themselves.
"""

from __future__ import annotations

import os
import platform

import posix_ipc

from dmxshm.shm.names import make_name, new_token

_TSO_MACHINES = frozenset({"x86_64", "amd64", "i386", "i686", "x86"})

MACHINE = platform.machine().lower()
NEEDS_FENCE: bool = MACHINE not in _TSO_MACHINES
ORDERING_PRIMITIVE = (
    "x86-64 TSO (no fence instruction needed)"
    if not NEEDS_FENCE
    else "sem_post + sem_trywait on a private POSIX semaphore (POSIX.1 4.12)"
)

_sem: posix_ipc.Semaphore | None = None
_sem_pid = 0


def _private_semaphore() -> posix_ipc.Semaphore:
    global _sem, _sem_pid
    if _sem is None or _sem_pid != os.getpid():
        name = make_name(new_token(), "fence")  # visible to 'dmxshm clean' if orphaned
        sem = posix_ipc.Semaphore(name, posix_ipc.O_CREX, 0o600, 0)
        sem.unlink()  # process-private from here on; nothing left in /dev/shm
        _sem, _sem_pid = sem, os.getpid()
    return _sem


def full_fence() -> None:
    """A full memory barrier on every architecture, x86-64 included.

    TSO keeps stores in order and loads in order, but lets a load pass an
    earlier store to another location. Two processes that each store a flag
    and then load the other's (the batch's "I wait until the workers have
    announced this many" against "I announced one more") both need this
    between their store and their load, or each can miss the other's store.
    ``sem_post`` is a locked read-modify-write on x86-64, which orders
    everything around it.
    """
    sem = _private_semaphore()
    sem.release()
    try:
        sem.acquire(0)
    except posix_ipc.BusyError:  # a forked sibling took the token: still a barrier
        pass


fence = full_fence
"""A full memory barrier where the CPU needs one for the seqlock (``NEEDS_FENCE``;
see the module docstring for why it holds)."""
