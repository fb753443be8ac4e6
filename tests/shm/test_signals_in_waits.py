"""Stop signals during semaphore waits: handlers record, waits act, nothing is lost.

posix_ipc runs the Python handlers inside an interrupted wait and replaces
what they raised (all but KeyboardInterrupt) with SignalError. dmxshm's own
SIGTERM handler only records, and the wait acts on the record; another
handler's exception comes out of a dmxshm wait unchanged; no handler is ever
replaced (see dmxshm.shm.signals).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any

import posix_ipc
import pytest

from dmxshm.errors import DmxError
from dmxshm.shm import signals
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from dmxshm.shm.waiting import acquire
from tests import procs
from tests.shm.slots import FIELD_DT

# When the signal comes, after the wait began (a timer, not a sleep: the wait
# is the test's subject, and a wait that ends early for no reason fails it).
SIGNAL_AFTER_S = 0.2
# A wait that a signal must end; waiting this long means the signal was lost.
LONG_WAIT_S = 10.0
TEST_TIMEOUT_S = 20
# Spawning a child and importing numpy + dmxshm there; generous for slow CI.
CHILD_START_TIMEOUT_S = 30.0


class Stop(SystemExit):
    pass


@pytest.fixture
def sem(registry: Registry) -> Iterator[posix_ipc.Semaphore]:
    s = registry.create_semaphore(registry.name("sig"), 0)
    yield s
    s.close()


@pytest.fixture
def restore_handlers() -> Iterator[None]:
    """Put the SIGINT and SIGTERM handlers back as they were, whatever the test did."""
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@pytest.fixture
def dmxshm_handler(restore_handlers: None) -> Iterator[None]:
    """dmxshm's SIGTERM handler, installed fresh."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    assert signals.install()
    try:
        yield
    finally:
        signals.uninstall()


def _soon(send: Callable[[], None]) -> threading.Timer:
    timer = threading.Timer(SIGNAL_AFTER_S, send)
    timer.start()
    return timer


def _to_process(signum: int) -> Callable[[], None]:
    return lambda: os.kill(os.getpid(), signum)


def _to_main_thread(signum: int) -> Callable[[], None]:
    main = threading.main_thread().ident
    assert main is not None
    return lambda: signal.pthread_kill(main, signum)


@pytest.mark.timeout(TEST_TIMEOUT_S)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("to", [_to_process, _to_main_thread], ids=["process", "thread"])
def test_the_handlers_exception_comes_out_of_the_wait(
        sem: posix_ipc.Semaphore, restore_handlers: None, signum: int,
        to: Callable[[int], Callable[[], None]]) -> None:
    def stop(signum: int, frame: object) -> None:
        raise Stop(1)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    timers = [_soon(to(signum))]
    try:
        # Bare posix_ipc loses the handler's exception: the reason for all this.
        with pytest.raises(posix_ipc.SignalError):
            sem.acquire(LONG_WAIT_S)
        timers.append(_soon(to(signum)))
        with pytest.raises(Stop):
            acquire(sem, LONG_WAIT_S)
    finally:
        for timer in timers:
            timer.cancel()
            timer.join()
    # ...and the caller's handlers are the caller's: nothing was wrapped or re-installed.
    assert signal.getsignal(signal.SIGTERM) is stop
    assert signal.getsignal(signal.SIGINT) is stop


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_a_handler_that_does_not_raise_runs_once_and_the_wait_says_why(
        sem: posix_ipc.Semaphore, restore_handlers: None) -> None:
    calls: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: calls.append(signum))
    # Sent to the waiting thread itself: sent to the process, the signal may go to
    # the timer's thread, which does not hold it back; the handler then runs all
    # the same, once, but the wait cannot tell, and waits on.
    timer = _soon(_to_main_thread(signal.SIGTERM))
    try:
        with pytest.raises(posix_ipc.SignalError):  # nothing to raise: the wait says why
            acquire(sem, LONG_WAIT_S)
    finally:
        timer.cancel()
        timer.join()
    assert calls == [signal.SIGTERM]


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_dmxshms_handler_only_records_in_a_wait_and_check_acts_once(
        dmxshm_handler: None) -> None:
    before = signals.seen()
    signals.deferring(+1)  # as a semaphore wait does while it may sleep
    try:
        signal.raise_signal(signal.SIGTERM)  # the handler runs here: it must not raise
    finally:
        signals.deferring(-1)
    assert signals.seen() == before + 1
    with pytest.raises(SystemExit) as info:
        signals.check()
    assert info.value.code == 128 + signal.SIGTERM
    signals.check()  # acted on once: the clean-up it started goes on in peace
    signal.raise_signal(signal.SIGTERM)  # another one during that clean-up: recorded only
    signals.check()


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_a_sigterm_outside_any_wait_unwinds_at_once(dmxshm_handler: None) -> None:
    # A command with no loop and no wait (replay, bench render): nothing would
    # look at a record, so the handler acts itself, once.
    with pytest.raises(SystemExit) as info:
        signal.raise_signal(signal.SIGTERM)
    assert info.value.code == 128 + signal.SIGTERM
    signals.check()  # acted on already: no second SystemExit


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_a_second_sigterm_that_nothing_acted_on_unwinds_at_once(dmxshm_handler: None) -> None:
    signals.deferring(+1)
    try:
        signal.raise_signal(signal.SIGTERM)  # recorded in a "wait" that never checks
    finally:
        signals.deferring(-1)
    with pytest.raises(SystemExit) as info:
        signal.raise_signal(signal.SIGTERM)  # nothing acted on the first: unwind here
    assert info.value.code == 128 + signal.SIGTERM


@pytest.mark.timeout(TEST_TIMEOUT_S)
@pytest.mark.parametrize("to", [_to_process, _to_main_thread], ids=["process", "thread"])
def test_a_recorded_sigterm_ends_a_ring_wait(registry: Registry, dmxshm_handler: None,
                                             to: Callable[[int], Callable[[], None]]) -> None:
    ring = Ring.create(registry, "sigterm", FIELD_DT, nslots=2).bind("reader")
    timer = _soon(to(signal.SIGTERM))
    try:
        with pytest.raises(SystemExit) as info:  # not a RingTimeoutError after LONG_WAIT_S
            ring.read(timeout_s=LONG_WAIT_S)
        assert info.value.code == 128 + signal.SIGTERM
    finally:
        timer.cancel()
        timer.join()
        ring.close()


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_a_wait_leaves_the_handlers_as_they_are(sem: posix_ipc.Semaphore,
                                                restore_handlers: None) -> None:
    def mine(signum: int, frame: object) -> None:
        pass

    signal.signal(signal.SIGTERM, mine)
    with pytest.raises(posix_ipc.BusyError):
        acquire(sem, SIGNAL_AFTER_S)
    assert signal.getsignal(signal.SIGTERM) is mine
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, [])  # and no signal left blocked


# -- in a child, as in a network: the stop signal comes from another process ----

def _stop_handler(signum: int, frame: object) -> None:
    raise Stop(128 + signum)


def wait_for_a_slot(name: str, handler: str, waiting: Event, conn: Connection) -> None:
    """Child: install ``handler`` for SIGTERM, wait on a ring; report what ended the wait."""
    if handler == "dmxshm":
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signals.install()
    elif handler == "raising":
        signal.signal(signal.SIGTERM, _stop_handler)  # as dmxshm.proc.child's Terminated
    ring = Ring.attach(name, side="reader", role="waiter")
    ended: Any
    try:
        waiting.set()
        ring.read(timeout_s=LONG_WAIT_S)
        ended = "a slot"
    except (SystemExit, KeyboardInterrupt, DmxError) as exc:
        ended = (type(exc).__name__, getattr(exc, "code", None))
    finally:
        ring.close()
    conn.send(ended)


@pytest.mark.timeout(2 * CHILD_START_TIMEOUT_S + LONG_WAIT_S)
@pytest.mark.parametrize(("handler", "signum", "expected"), [
    ("dmxshm", signal.SIGTERM, ("SystemExit", 128 + signal.SIGTERM)),
    ("raising", signal.SIGTERM, ("Stop", 128 + signal.SIGTERM)),
    ("python", signal.SIGINT, ("KeyboardInterrupt", None)),  # Ctrl-C
], ids=["dmxshm-sigterm", "raising-sigterm", "ctrl-c"])
def test_a_stop_signal_from_outside_ends_a_childs_ring_wait(
        registry: Registry, handler: str, signum: int, expected: tuple[str, int | None]) -> None:
    ring = Ring.create(registry, "child", FIELD_DT, nslots=2).bind("writer")
    waiting = procs.CTX.Event()
    parent_end, child_end = procs.CTX.Pipe(duplex=False)
    child = procs.start(wait_for_a_slot, ring.name, handler, waiting, child_end)
    try:
        child_end.close()
        assert waiting.wait(CHILD_START_TIMEOUT_S), "the child never got to its wait"
        os.kill(child.pid, signum)  # type: ignore[arg-type]
        # Within the ring's own timeout: a lost signal would show as a RingTimeoutError.
        assert parent_end.poll(CHILD_START_TIMEOUT_S), "the child never reported"
        assert parent_end.recv() == expected
    finally:
        procs.stop(child)
        parent_end.close()
        ring.close()


_DROPPED = """
import os, signal, sys, time
from dmxshm.shm import signals
class Stop(SystemExit):
    pass
assert signals.install(exit_with=lambda n: Stop(n))
class Finaliser:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        t = time.monotonic()
        while time.monotonic() - t < 5.0:  # the handler runs in here, in the finaliser
            pass
Finaliser()  # collected at once: Python drops what its __del__ raised
try:
    signals.check()  # what every wait does first
except Stop:
    sys.exit(0)
sys.exit(1)
"""


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_a_stop_raised_in_a_finaliser_is_acted_on_at_the_next_check() -> None:
    # The handler's raise landed in a __del__: Python printed and dropped it, and the
    # process lived on (a renderer SIGTERMed as it started ran its run on).
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _DROPPED], capture_output=True, text=True,
                         timeout=TEST_TIMEOUT_S)
    assert out.returncode == 0, out.stderr
    assert "Exception ignored in" in out.stderr  # it was dropped, and acted on all the same
