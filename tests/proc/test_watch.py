"""The watch policy: a failure opens a report grace, the root cause is named after it,
and tolerated children never fail the run."""

from __future__ import annotations

import os
import signal

import pytest

from dmxshm.proc.outcome import Cause, Outcome
from dmxshm.proc.supervisor import Supervisor
from dmxshm.proc.watch import Watch, WatchPolicy, explain
from tests.proc import targets

TIMEOUT_S = 60
WAIT_S = 30.0  # the longest a test waits for a child's news
SHORT_GRACE_S = 0.2


def watch_out(watch: Watch) -> None:
    """Step ``watch`` until it ends; fail if that takes longer than any test may."""
    import time

    deadline = time.monotonic() + WAIT_S
    while watch.step():
        assert time.monotonic() < deadline, "the watch did not end in time"


@pytest.mark.timeout(TIMEOUT_S)
def test_a_death_seen_after_a_peer_error_is_still_the_root_cause() -> None:
    with Supervisor() as sup:
        # The peer error comes first; the death only once its process is gone.
        seer = sup.start("renderer-0", targets.raises_peer_died)
        victim = sup.start("engine", targets.killed_once_gone, seer.pid, WAIT_S)
        # A grace longer than the test: the watch ends when both have ended.
        watch = Watch(sup, WatchPolicy(report_grace_s=WAIT_S))
        watch_out(watch)
        assert watch.failing and not sup.running()
        assert seer.first_seen <= victim.first_seen  # the peer error was seen first...
        cause = watch.failure()
        assert cause is not None  # ...yet the death is named
        assert (cause.name, cause.pid, cause.cause) == ("engine", victim.pid, Cause.KILLED)


@pytest.mark.timeout(TIMEOUT_S)
def test_the_grace_ends_the_watch_while_others_still_run() -> None:
    with Supervisor() as sup:
        failed = sup.start("agent-0", targets.raises_value_error, "bad wheels")
        busy = sup.start("engine", targets.sleeps, WAIT_S)
        watch = Watch(sup, WatchPolicy(report_grace_s=SHORT_GRACE_S))
        watch_out(watch)
        assert busy.alive() and not busy.ended  # not awaited past the grace
        cause = watch.failure()
        assert cause is not None and (cause.name, cause.pid) == ("agent-0", failed.pid)
        assert cause.cause is Cause.RAISED


@pytest.mark.timeout(TIMEOUT_S)
def test_a_tolerated_failure_neither_opens_the_grace_nor_is_the_cause() -> None:
    with Supervisor() as sup:
        sup.start("spine-agent", targets.raises_value_error, "agent crashed")
        sup.start("spine", targets.returns, "done")
        watch = Watch(sup, WatchPolicy(tolerated=frozenset({"spine-agent"})))
        watch_out(watch)
        assert not watch.failing and not sup.running()
        assert watch.failure() is None
        failure = sup.failure()  # the supervisor itself still sees it
        assert failure is not None and failure.name == "spine-agent"


@pytest.mark.timeout(TIMEOUT_S)
def test_a_child_stopped_past_the_stall_limit_fails_the_run_where_nobody_waits() -> None:
    with Supervisor() as sup:
        victim = sup.start("camera-0", targets.sleeps, WAIT_S)
        other = sup.start("engine", targets.sleeps, WAIT_S)
        os.kill(victim.pid, signal.SIGSTOP)
        watch = Watch(sup, WatchPolicy(report_grace_s=SHORT_GRACE_S, stall_limit_s=0.2))
        watch_out(watch)  # nobody waits for the victim: without the limit, WAIT_S
        cause = watch.failure()
        assert cause is not None
        assert (cause.name, cause.pid, cause.cause) == ("camera-0", victim.pid, Cause.STOPPED)
        assert cause.message.startswith("stopped (SIGSTOP?) for ")
        assert other.alive() and other.outcome is None  # the others did not fail
        assert explain(cause).startswith("camera-0 (pid ")


@pytest.mark.timeout(TIMEOUT_S)
def test_a_child_resumed_within_the_stall_limit_does_not_fail_the_run() -> None:
    with Supervisor() as sup:
        victim = sup.start("agent-0", targets.sleeps, 0.5)
        os.kill(victim.pid, signal.SIGSTOP)
        watch = Watch(sup, WatchPolicy(stall_limit_s=WAIT_S))
        while not watch._stopped_since:  # seen stopped at least once
            assert watch.step()
        os.kill(victim.pid, signal.SIGCONT)
        watch_out(watch)
        assert watch.failure() is None and victim.outcome is not None
        assert victim.outcome.ok


def test_the_message_names_who_how_and_what_to_do() -> None:
    killed = Outcome("can-bus", 42, Cause.KILLED, signum=9, message="signal 9 (SIGKILL)")
    assert explain(killed) == "can-bus (pid 42) died: signal 9 (SIGKILL); the run was stopped."
    stopped = Outcome("spine", 7, Cause.STOPPED, message="stopped (SIGSTOP?)")
    assert explain(stopped, longer_wait="--timeout").endswith(
        "Resume it with SIGCONT or raise --timeout.")
    assert "pid 7" in explain(stopped) and "--timeout" not in explain(stopped)
    raised = Outcome("engine", 3, Cause.RAISED, error_type="ValueError", message="bad",
                     traceback="Traceback (most recent call last):\n  ...\nValueError: bad\n")
    assert explain(raised) == ("engine (pid 3) failed: ValueError: bad\n--- traceback of "
                               "engine ---\nTraceback (most recent call last):\n  ...\n"
                               "ValueError: bad")


@pytest.mark.timeout(TIMEOUT_S)
def test_a_stop_goes_in_the_policys_order_first_ones_first_then_the_end_grace() -> None:
    import time

    policy = WatchPolicy(stop_first=("first",), stop_first_grace_s=5.0, end_grace_s=0.5)
    with Supervisor() as sup:
        first = sup.start("first", targets.sleeps, 60.0)
        other = sup.start("other", targets.sleeps, 60.0)
        t0 = time.monotonic()
        Watch(sup, policy).stop()
        sup.wait(1.0)
        assert first.ended and other.ended
        assert other.outcome is not None and other.outcome.cause is Cause.SIGNALLED
        # The first one ended before the others were told; they were told after the grace.
        assert first.ended_at is not None and other.ended_at is not None
        assert first.ended_at < other.ended_at
        assert other.ended_at - t0 >= policy.end_grace_s


def test_a_policy_without_stop_first_stops_everyone_at_once() -> None:
    with Supervisor() as sup:
        assert Watch(sup).stop_first() is False


@pytest.mark.timeout(TIMEOUT_S)
def test_stopping_first_resumes_a_stopped_child_the_first_ones_may_need() -> None:
    # A spine stopped first sends its stops to its engine: an engine stopped (SIGSTOP),
    # whether the watch marked it or its peers' timeouts named it, is resumed first.
    import time

    with Supervisor() as sup:
        engine = sup.start("engine", targets.sleeps, WAIT_S)
        sup.start("spine", targets.sleeps, WAIT_S)
        os.kill(engine.pid, signal.SIGSTOP)
        deadline = time.monotonic() + WAIT_S
        while not engine.stopped():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        Watch(sup, WatchPolicy(stop_first=("spine",), stop_first_grace_s=5.0)).stop_first()
        assert not engine.stopped() and engine.alive()  # going on, until it is stopped
