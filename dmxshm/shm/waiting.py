"""Bounded waits on POSIX semaphores with liveness checks.

A bare ``sem_wait`` would wait forever for a peer that died (POSIX semaphores
have no owner-death detection, posix_ipc#53). :func:`wait_semaphore` waits in
short chunks; between chunks it calls a check that raises when a peer is gone
or the object was closed, and once the timeout has passed it raises the
timeout error the caller built, naming what it waited for and for whom.

Every wait that may sleep goes through :func:`acquire`, which is where a stop
signal is acted on (see :mod:`dmxshm.shm.signals` for why it takes the shape
it has: posix_ipc replaces what a handler raises during a wait).
"""

from __future__ import annotations

import _signal
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
    """``sem.acquire(timeout_s)`` (None: no limit), where a stop signal is acted on.

    Raises:
        posix_ipc.BusyError: nothing within ``timeout_s``.
        posix_ipc.SignalError: a signal whose handler raised nothing ended the
            wait early (the caller waits on, or looks why).
        SystemExit: dmxshm's SIGTERM handler recorded a signal
            (:func:`dmxshm.shm.signals.check`).
        whatever another SIGINT or SIGTERM handler raises, unchanged.
    """
    signals.check()
    held = signals.held_in_waits() if timeout_s != 0 else ()  # a try-wait never sleeps
    try:
        signals.deferring(+1)  # dmxshm's handler records while this waits, and this acts
        if held:
            _acquire_holding(sem, timeout_s, held)
        else:
            try:
                sem.acquire(timeout_s)
            except posix_ipc.SignalError:
                signals.check()  # dmxshm's handler ran in the wait and only recorded
                raise
    finally:
        signals.deferring(-1)
    # A signal recorded as the wait ended (its token came, or before the call
    # slept) ended no wait: act on it here, not at some later wait.
    signals.check()


def _acquire_holding(sem: posix_ipc.Semaphore, timeout_s: float | None,
                     held: tuple[int, ...]) -> None:
    """:func:`acquire` with the ``held`` stop signals blocked while it sleeps, in
    chunks, so that their handlers run between chunks, in plain Python, and what
    they raise is not replaced by posix_ipc (see :mod:`dmxshm.shm.signals`)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    chunk = LIVENESS_POLL_S if timeout_s is None else min(max(timeout_s, 0.0), LIVENESS_POLL_S)
    while True:
        came = got = False
        before: set[int] | None = None
        try:
            before = _signal.pthread_sigmask(_signal.SIG_BLOCK, held)
            sem.acquire(chunk)
            got = True
        except posix_ipc.BusyError:
            came = not _signal.sigpending().isdisjoint(set(held) - set(before or ()))
        finally:
            if before is not None:  # the caller's mask again, whatever happened in between:
                # a pending handler runs here, and what it raises goes up as it is
                _signal.pthread_sigmask(_signal.SIG_SETMASK, before)
        if got:
            return
        signals.check()
        if came:  # its handler ran and raised nothing: say why the wait ended, as posix_ipc
            raise posix_ipc.SignalError("The wait was interrupted by a signal")
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise posix_ipc.BusyError("Semaphore is busy")
            chunk = min(left, LIVENESS_POLL_S)


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
            continue  # its handler has run and raised nothing: wait on
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
            # BusyError: this chunk ran out. SignalError: a signal whose handler
            # raised nothing came (one that raised, or a recorded SIGTERM, came
            # out of acquire); wait on, as PEP 475 does.
            pass
