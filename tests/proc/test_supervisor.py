"""The process layer: children start, report one typed outcome, and are ranked and stopped."""

from __future__ import annotations

import os
import signal

import psutil
import pytest

from dmxshm.proc import forkserver
from dmxshm.proc.child import ref
from dmxshm.proc.outcome import Cause, Outcome, root_cause
from dmxshm.proc.supervisor import Child, Supervisor
from tests.proc import targets

TIMEOUT_S = 60
WAIT_S = 30.0  # the longest a test waits for a child's news


def wait_until(sup: Supervisor, done: object, timeout_s: float = WAIT_S) -> None:
    """Let ``sup`` gather news until ``done()``; fail after ``timeout_s``."""
    import time

    deadline = time.monotonic() + timeout_s
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, "no news from the children in time"
        sup.wait(0.1)


def ended(child: Child) -> object:
    return lambda: child.ended


def named(child: Child) -> object:
    """True once the child took its name (its signal handling is then in place)."""
    def check() -> bool:
        try:
            return psutil.Process(child.pid).name() == f"dmx-{child.name}"
        except psutil.NoSuchProcess:
            return True
    return check


@pytest.mark.timeout(TIMEOUT_S)
def test_a_child_returns_its_result_and_exits_zero() -> None:
    with Supervisor() as sup:
        child = sup.start("worker-0", targets.returns, {"answer": 42})
        wait_until(sup, ended(child))
        assert child.outcome == Outcome(name="worker-0", pid=child.pid, cause=Cause.OK,
                                        result={"answer": 42}, exitcode=0)
        assert sup.failure() is None


@pytest.mark.timeout(TIMEOUT_S)
def test_a_child_imports_gymnasium_only_when_its_target_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Registering dmxshm's envs imported gymnasium in every child: most of its start-up.
    # A fresh interpreter each (a forked child has what its fork server imported:
    # tests/proc/test_forkserver.py checks that this is no more to begin with).
    monkeypatch.setenv(forkserver.START_ENV, "spawn")
    heavy = ["gymnasium", "pettingzoo", "numba", "pybullet", "PIL"]
    with Supervisor() as sup:
        bare = sup.start("worker-0", targets.imported, heavy)
        gym = sup.start("worker-1", targets.registered_once_gymnasium_is_imported)
        wait_until(sup, lambda: bare.ended and gym.ended)
        assert bare.outcome is not None and bare.outcome.result == dict.fromkeys(heavy, False)
        # A target that imports gymnasium still finds dmxshm's envs registered.
        assert gym.outcome is not None and gym.outcome.result == {
            "imported_before": False, "v0": True, "v1": True}


@pytest.mark.timeout(TIMEOUT_S)
def test_a_raising_child_reports_type_message_and_traceback() -> None:
    with Supervisor() as sup:
        child = sup.start("agent-1", targets.raises_value_error, "bad wheels")
        wait_until(sup, ended(child))
        out = child.outcome
        assert out is not None and out.cause is Cause.RAISED and out.exitcode == 1
        assert (out.error_type, out.message) == ("ValueError", "bad wheels")
        assert "raises_value_error" in out.traceback
        assert out.describe() == "ValueError: bad wheels"


@pytest.mark.timeout(TIMEOUT_S)
def test_a_peer_error_is_secondary_and_names_the_peer() -> None:
    with Supervisor() as sup:
        child = sup.start("engine", targets.raises_peer_died)
        wait_until(sup, ended(child))
        out = child.outcome
        assert out is not None and out.cause is Cause.PEER
        assert (out.peer_role, out.peer_pid) == ("renderer-0", 1)
        assert out.error_type == "dmxshm.errors.PeerDiedError"


@pytest.mark.timeout(TIMEOUT_S)
@pytest.mark.parametrize("signum, cause", [(signal.SIGKILL, Cause.KILLED),
                                            (signal.SIGTERM, Cause.SIGNALLED)])
def test_a_signal_is_named(signum: int, cause: Cause) -> None:
    with Supervisor() as sup:
        child = sup.start("renderer-0", targets.sleeps, 60.0)
        wait_until(sup, named(child))
        os.kill(child.pid, signal.SIGINT)  # ignored: Ctrl-C is the supervisor's
        os.kill(child.pid, signum)
        wait_until(sup, ended(child))
        out = child.outcome
        assert out is not None and out.cause is cause and out.signum == signum
        assert out.describe() == f"signal {signum} ({signal.Signals(signum).name})"


@pytest.mark.timeout(TIMEOUT_S)
def test_an_exit_without_a_report_is_told_by_its_status() -> None:
    with Supervisor() as sup:
        child = sup.start("agent-0", targets.exits, 3)
        wait_until(sup, ended(child))
        out = child.outcome
        assert out is not None and (out.cause, out.exitcode) == (Cause.EXITED, 3)


@pytest.mark.timeout(TIMEOUT_S)
def test_the_root_cause_is_where_trouble_started_not_who_saw_it() -> None:
    with Supervisor() as sup:
        victim = sup.start("renderer-0", targets.sleeps, 60.0)
        wait_until(sup, named(victim))
        os.kill(victim.pid, signal.SIGKILL)
        wait_until(sup, ended(victim))
        witness = sup.start("engine", targets.raises_peer_died)  # ends after the victim
        wait_until(sup, ended(witness))
        failure = sup.failure()
        assert failure is not None and failure.name == "renderer-0"
        assert failure.cause is Cause.KILLED
        assert sup.failure(exclude=["renderer-0"]).name == "engine"  # type: ignore[union-attr]


def test_ranking_ties_go_to_the_first_to_end() -> None:
    a = Outcome(name="a", pid=1, cause=Cause.RAISED)
    b = Outcome(name="b", pid=2, cause=Cause.RAISED)
    peer = Outcome(name="p", pid=3, cause=Cause.PEER)
    ok = Outcome(name="o", pid=4, cause=Cause.OK)
    assert root_cause([(peer, 0.0), (b, 2.0), (a, 1.0), (ok, 0.0)]) is a
    assert root_cause([(ok, 0.0)]) is None


@pytest.mark.timeout(TIMEOUT_S)
def test_a_stopped_child_is_the_cause_when_the_others_only_timed_out() -> None:
    with Supervisor() as sup:
        frozen = sup.start("renderer-0", targets.sleeps, 60.0)
        wait_until(sup, named(frozen))
        os.kill(frozen.pid, signal.SIGSTOP)
        witness = sup.start("engine", targets.raises_peer_died)
        wait_until(sup, ended(witness))
        failure = sup.failure()
        assert failure is not None and failure.cause is Cause.STOPPED
        assert failure.name == "renderer-0" and failure.pid == frozen.pid
        sup.stop([frozen])  # wakes it to die
        assert not frozen.alive()


@pytest.mark.timeout(TIMEOUT_S)
def test_a_child_is_pinned_reads_nothing_and_never_runs_our_main() -> None:
    cpu = sorted(os.sched_getaffinity(0))[-1]
    with Supervisor() as sup:
        child = sup.start("agent-0", targets.where_am_i, cpu=cpu)
        wait_until(sup, ended(child))
        seen = child.outcome.result  # type: ignore[union-attr]
        # Its parent is this process, or this process's fork server; its supervisor is this.
        assert seen["cpus"] == [cpu] and seen["supervisor"] == os.getpid()
        assert seen["ppid"] in (os.getpid(), forkserver.server_pid())
        assert seen["stdin_is_null"]
        assert seen["main_file"] is None or seen["main_file"].endswith(
            os.path.join("dmxshm", "proc", "__main__.py"))


@pytest.mark.timeout(TIMEOUT_S)
def test_a_stop_handler_only_records_and_the_target_ends_itself() -> None:
    with Supervisor() as sup:
        child = sup.start("spine", targets.waits_for_stop, 60.0, on_stop=targets.records_stop)
        wait_until(sup, named(child))
        os.kill(child.pid, signal.SIGINT)
        wait_until(sup, ended(child))
        assert child.outcome is not None and child.outcome.result == signal.SIGINT


@pytest.mark.timeout(TIMEOUT_S)
def test_stop_terminates_then_kills_and_close_leaves_no_process() -> None:
    sup = Supervisor()
    try:
        sleeping = sup.start("a", targets.sleeps, 60.0)
        frozen = sup.start("b", targets.sleeps, 60.0)
        wait_until(sup, lambda: named(sleeping)() and named(frozen)())
        os.kill(frozen.pid, signal.SIGSTOP)
        wait_until(sup, frozen.stopped)
    finally:
        sup.close()
    assert not sleeping.alive() and not frozen.alive()
    assert sleeping.outcome is not None and sleeping.outcome.cause is Cause.SIGNALLED
    assert frozen.outcome is not None and frozen.outcome.cause is Cause.SIGNALLED


@pytest.mark.timeout(TIMEOUT_S)
def test_a_child_stops_on_sigterm_even_when_its_parent_ignores_it() -> None:
    # An ignored SIGTERM is inherited across exec (a run started under
    # `trap '' TERM`): a child must still unwind when its supervisor stops it.
    before = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sup = Supervisor()
    try:
        child = sup.start("a", targets.sleeps, 60.0)
        wait_until(sup, named(child))
        sup.stop(grace_s=TIMEOUT_S / 2)
    finally:
        sup.close()
        signal.signal(signal.SIGTERM, before)
    # Unwound by the signal (a report with its partial result), not killed.
    assert child.outcome is not None and child.outcome.cause is Cause.SIGNALLED


@pytest.mark.timeout(TIMEOUT_S)
def test_a_result_that_does_not_pickle_becomes_a_reported_error() -> None:
    with Supervisor() as sup:
        child = sup.start("agent-0", targets.unpicklable)
        wait_until(sup, ended(child))
        out = child.outcome
        assert out is not None and out.cause is Cause.RAISED and "pickle" in out.message.lower()


def local_function() -> None:
    pass


def test_only_importable_functions_can_run_in_a_child() -> None:
    assert ref(targets.returns) == "tests.proc.targets:returns"
    with pytest.raises(ValueError, match="top level"):
        ref(lambda: None)

    def nested() -> None:
        pass

    with pytest.raises(ValueError, match="top level"):
        ref(nested)
    local_function.__module__ = "__main__"
    try:
        with pytest.raises(ValueError, match="__main__"):
            ref(local_function)
    finally:
        local_function.__module__ = __name__


@pytest.mark.timeout(TIMEOUT_S)
def test_a_child_whose_fork_holds_its_channel_is_seen_to_end() -> None:
    grandchild_s = 5.0
    with Supervisor() as sup:
        child = sup.start("agent-0", targets.forks_and_returns, grandchild_s)
        wait_until(sup, ended(child), timeout_s=grandchild_s / 2)
        assert child.outcome is not None and child.outcome.ok
        assert psutil.pid_exists(child.outcome.result)  # the fork still holds the channel


@pytest.mark.timeout(TIMEOUT_S)
def test_arguments_defined_in_main_are_refused_before_a_child_starts() -> None:
    class FromMain(targets.Hook):
        pass

    FromMain.__module__ = "__main__"
    with Supervisor() as sup:
        with pytest.raises(ValueError, match="FromMain is defined in __main__"):
            sup.start("engine", targets.calls, FromMain())
        assert sup.children == []
        child = sup.start("engine", targets.calls, targets.Hook())
        wait_until(sup, ended(child))
        assert child.outcome is not None and child.outcome.result == "hooked"


@pytest.mark.timeout(TIMEOUT_S)
def test_a_child_that_fails_before_its_target_reports_why() -> None:
    with Supervisor() as sup:
        child = sup.start("renderer-0", targets.returns, 1, cpu=10**6)  # no such CPU
        wait_until(sup, ended(child))
        out = child.outcome
        assert out is not None and out.cause is Cause.RAISED and out.name == "renderer-0"
        assert "sched_setaffinity" in out.traceback
