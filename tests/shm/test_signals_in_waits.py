"""A signal that arrives during a semaphore wait raises its handler's exception.

posix_ipc runs the Python handler inside the interrupted wait and replaces
what it raised with SignalError; dmxshm.shm.signals.watch puts it back.
"""

from __future__ import annotations

import os
import signal
import threading

import posix_ipc
import pytest

from dmxshm.shm import signals
from dmxshm.shm.waiting import acquire


class Stop(SystemExit):
    pass


@pytest.fixture
def sem():  # noqa: ANN201
    s = posix_ipc.Semaphore(f"/dmx-test-sig-{os.getpid()}", posix_ipc.O_CREX, 0o600, 0)
    s.unlink()
    yield s
    s.close()


@pytest.mark.timeout(20)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_handlers_exception_comes_out_of_the_wait(sem, signum: int) -> None:  # noqa: ANN001
    def stop(signum: int, frame: object) -> None:
        raise Stop(1)

    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    timers: list[threading.Timer] = []

    def wait_with_a_signal(wait: object) -> None:
        timers.append(threading.Timer(0.2, os.kill, (os.getpid(), signum)))
        timers[-1].start()
        wait()  # type: ignore[operator]

    try:
        # Bare posix_ipc loses the handler's exception: the reason for the wrapper.
        with pytest.raises(posix_ipc.SignalError):
            wait_with_a_signal(lambda: sem.acquire(10.0))
        signals.watch()
        with pytest.raises(Stop):
            wait_with_a_signal(lambda: acquire(sem, 10.0))
    finally:
        for timer in timers:
            timer.cancel()
        for s, handler in old.items():
            signal.signal(s, handler)


@pytest.mark.timeout(20)
def test_a_handler_that_does_not_raise_runs_once_per_signal(sem) -> None:  # noqa: ANN001
    calls: list[int] = []
    old = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda signum, frame: calls.append(signum))
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
    try:
        timer.start()
        with pytest.raises(posix_ipc.SignalError):  # nothing to raise: the wait says why
            acquire(sem, 10.0)
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, old)
    assert calls == [signal.SIGTERM]
