"""Bounded waits on POSIX semaphores with liveness checks.

A bare ``sem_wait`` would wait forever for a peer that died (POSIX semaphores
have no owner-death detection, posix_ipc#53). :func:`wait_semaphore` waits in
short chunks; between chunks it calls a check that raises when a peer is gone
or the object was closed, and once the timeout has passed it raises the
timeout error the caller built, naming what it waited for and for whom.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import posix_ipc

from dmxshm.errors import DmxTimeoutError
from dmxshm.settings import LIVENESS_POLL_S
from dmxshm.shm import signals

# Polls longer than this yield the CPU at each turn (see spin_until).
YIELD_ABOVE_S = 100e-6
# What an acquire with a timeout raises when it should just be tried again.
EMPTY_OR_INTERRUPTED = (posix_ipc.BusyError, posix_ipc.SignalError)


def first_chunk(timeout_s: float) -> float:
    """How long the first, unchecked acquire may wait."""
    return timeout_s if timeout_s < LIVENESS_POLL_S else LIVENESS_POLL_S


def spin_until(cond: Callable[[], bool], spin_s: float) -> None:
    """Poll up to ``spin_s`` for ``cond()``; cheaper than sleeping when the
    peer answers within that time: no semaphore wake-up, no idle core to wake."""
    clock = time.perf_counter
    deadline = clock() + spin_s
    if spin_s <= YIELD_ABOVE_S:
        while not cond() and clock() < deadline:
            pass
        return
    # A long poll gives the core away at every turn (sched_yield): a process
    # that shares the core runs almost as if we slept, yet the core never goes
    # idle, and an idle core of a VM takes 20-50 us to wake.
    while not cond() and clock() < deadline:
        os.sched_yield()


def acquire(sem: posix_ipc.Semaphore, timeout_s: float | None) -> None:
    """``sem.acquire(timeout_s)``, but a watched signal's exception is not lost.

    Raises:
        posix_ipc.BusyError: nothing within ``timeout_s``.
        posix_ipc.SignalError: a signal without a watched handler came.
        whatever the handler of a watched signal raises (see
            :func:`dmxshm.shm.signals.raise_swallowed`).
    """
    signals.watch()
    before = signals.seen()
    try:
        sem.acquire(timeout_s)
    except posix_ipc.SignalError:
        signals.raise_swallowed(before)
        raise


def acquire_raw(sem: posix_ipc.Semaphore, timeout_s: float, what: str) -> None:
    """Acquire a bare semaphore (benchmark floors): retry on signals, clear timeout.

    Raises:
        DmxTimeoutError: nothing came within ``timeout_s``; names ``what``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            acquire(sem, max(deadline - time.monotonic(), 0.0))
            return
        except posix_ipc.SignalError:
            continue  # the handler has run (PEP 475); it raises if it wants us out
        except posix_ipc.BusyError:
            raise DmxTimeoutError(f"waited {timeout_s:.1f} s for {what}; is its peer alive?"
                                  ) from None


def wait_semaphore(
    sem: posix_ipc.Semaphore,
    timeout_s: float,
    check: Callable[[], None],
    on_timeout: Callable[[float], Exception],
    waited_s: float = 0.0,
) -> None:
    """Acquire ``sem`` within ``timeout_s`` seconds.

    Args:
        sem: the semaphore.
        timeout_s: the longest time to wait; 0 tries once.
        check: called after each empty chunk; raises to abort the wait
            (dead peer, closed ring, broken barrier).
        on_timeout: builds the error raised at the deadline, given the
            seconds waited.
        waited_s: time the caller already waited (added to the report).

    Raises:
        whatever ``check`` raises, or ``on_timeout(waited_s)``.
    """
    t0 = time.monotonic() - waited_s
    deadline = t0 + timeout_s
    if not waited_s:
        try:
            acquire(sem, first_chunk(timeout_s) if timeout_s > 0 else 0)
            return
        except EMPTY_OR_INTERRUPTED:
            pass
    while True:
        check()
        now = time.monotonic()
        if now >= deadline:
            raise on_timeout(now - t0)
        try:
            acquire(sem, min(deadline - now, LIVENESS_POLL_S))
            return
        except EMPTY_OR_INTERRUPTED:
            # BusyError: this chunk ran out. SignalError: a signal with a Python
            # handler arrived; the handler runs on return to Python (and may
            # raise, e.g. KeyboardInterrupt), else we wait on (PEP 475).
            pass
