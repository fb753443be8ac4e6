"""Tests of dmxshm.shm.waiting: bounded semaphore waits with liveness checks."""

from __future__ import annotations

from collections.abc import Iterator

import posix_ipc
import pytest

from dmxshm.shm.registry import Registry
from dmxshm.shm.waiting import LIVENESS_POLL_S, wait_semaphore

# Long enough for several liveness polls.
SEVERAL_POLLS_S = 6 * LIVENESS_POLL_S


class Gone(Exception):
    pass


@pytest.fixture
def sem(registry: Registry) -> Iterator[posix_ipc.Semaphore]:
    s = registry.create_semaphore(registry.name("wait"), 0)
    yield s
    s.close()


def never_called(waited_s: float) -> Exception:
    raise AssertionError(f"timed out after {waited_s} s")


@pytest.mark.parametrize("timeout_s", [0, SEVERAL_POLLS_S], ids=["zero", "polls"])
def test_takes_available_token(sem: posix_ipc.Semaphore, timeout_s: float) -> None:
    sem.release()
    wait_semaphore(sem, timeout_s, lambda: pytest.fail("checked with a token there"),
                   never_called)
    assert sem.value == 0


@pytest.mark.parametrize("timeout_s", [0, -1, SEVERAL_POLLS_S], ids=["zero", "negative", "polls"])
def test_timeout_builds_callers_error(sem: posix_ipc.Semaphore, timeout_s: float) -> None:
    checks: list[None] = []
    waited: list[float] = []

    def on_timeout(waited_s: float) -> Exception:
        waited.append(waited_s)
        return TimeoutError("late")

    with pytest.raises(TimeoutError, match="late"):
        wait_semaphore(sem, timeout_s, lambda: checks.append(None), on_timeout)
    assert len(waited) == 1 and waited[0] >= 0
    assert checks, "peers are looked at before giving up"
    if timeout_s > 0:
        assert len(checks) >= 2, "a long wait looks at its peers more than once"
        assert waited[0] >= timeout_s  # it did not give up early


def test_check_aborts_the_wait(sem: posix_ipc.Semaphore) -> None:
    calls: list[None] = []

    def check() -> None:
        calls.append(None)
        if len(calls) == 2:
            raise Gone

    with pytest.raises(Gone):
        wait_semaphore(sem, 60.0, check, never_called)
    assert len(calls) == 2


def test_token_arriving_during_wait_is_taken(sem: posix_ipc.Semaphore) -> None:
    def check() -> None:  # the "peer" posts while we wait
        sem.release()

    wait_semaphore(sem, 60.0, check, never_called)
    assert sem.value == 0


@pytest.mark.parametrize("spin_s", [50e-6, 10.0])  # a short plain poll, a long yielding one
def test_spin_until_returns_as_soon_as_the_condition_holds(spin_s: float) -> None:
    from dmxshm.shm.waiting import spin_until

    calls = []

    def cond() -> bool:
        calls.append(1)
        return len(calls) >= 3

    spin_until(cond, spin_s)
    if spin_s > 1:
        assert len(calls) == 3  # stopped polling exactly when it held
    else:
        assert 1 <= len(calls) <= 3  # a 50 us poll may also run out first
