"""Tests of dmxshm.shm.peers: telling alive, stopped and dead peers apart."""

from __future__ import annotations

import os
import signal
from multiprocessing.synchronize import Event

import pytest

from dmxshm.shm.peers import (
    ALIVE,
    DEAD,
    STOPPED,
    Peer,
    me,
    peer_state,
    pid_alive,
    process_create_time,
)
from tests import procs

CHILD_START_TIMEOUT_S = 30.0
TEST_TIMEOUT_S = 90


def test_me_is_alive() -> None:
    rec = me("engine")
    assert (rec.role, rec.pid) == ("engine", os.getpid()) and rec.create_time > 0
    assert peer_state(rec) == ALIVE
    assert rec.describe() == f"engine (pid {os.getpid()}, alive)"
    assert pid_alive(os.getpid())


def test_nobody_is_dead() -> None:
    assert peer_state(Peer("x", 0, 0.0)) == DEAD
    assert Peer("x", 0, 0.0).describe() == "x (not attached yet)"


def test_reused_pid_counts_as_dead() -> None:
    # Same pid, but a start time a day off: another process got the pid.
    rec = me("old")
    assert peer_state(Peer("old", rec.pid, rec.create_time - 86400)) == DEAD


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="Linux's /proc only")
def test_a_wall_clock_correction_does_not_make_a_live_peer_dead(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A VM's clock being slewed moves /proc/stat's whole-second boot time now and
    # then: every live writer recorded before looked reused ("died") after it.
    import psutil

    rec = me("writer")
    boot = psutil.boot_time()
    monkeypatch.setattr(psutil, "boot_time", lambda: boot + 1.0)
    monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: boot + 1.0)
    assert peer_state(rec) == ALIVE
    assert process_create_time(rec.pid) == rec.create_time


def wait_for(ready: Event, never: Event) -> None:
    ready.set()
    never.wait(CHILD_START_TIMEOUT_S * 3)


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_child_states() -> None:
    ready, never = procs.CTX.Event(), procs.CTX.Event()
    child = procs.start(wait_for, ready, never, own=True)  # waited for: stopped, a zombie
    try:
        assert ready.wait(CHILD_START_TIMEOUT_S)
        peer = Peer("child", child.pid, process_create_time(child.pid))
        assert peer_state(peer) == ALIVE
        os.kill(child.pid, signal.SIGSTOP)
        _, status = os.waitpid(child.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status)
        assert peer_state(peer) == STOPPED and pid_alive(child.pid)
        assert "stopped" in peer.describe()
        os.kill(child.pid, signal.SIGKILL)
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped
        assert peer_state(peer) == DEAD and not pid_alive(child.pid)  # a zombie
        child.join(CHILD_START_TIMEOUT_S)
        assert peer_state(peer) == DEAD  # gone
        assert process_create_time(peer.pid) == 0.0
    finally:
        procs.stop(child)
