"""Fault injection, the fast part: each kind of process of each mode, killed once.

``scripts/faults.py`` repeats every case many times at random moments; here
each runs once, at a moment drawn from a seeded generator, so a failure can
be replayed. Every run must end before its 5 s wait timeout could have ended it (a
SIGSTOP, in every mode: within that timeout plus 2 s) with a non-zero status and an
error naming the process, its pid and the signal, and leave nothing in /dev/shm. How
soon it ends (within 2 s of a kill) is scripts/faults.py's figure.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import zlib

import psutil
import pytest

from dmxshm.bench.faults import DETECT_S, TARGET_TIMEOUT_S, TARGETS, inject
from dmxshm.shm.names import list_entries
from tests import procs

_ALL = [
    *[("gym", role, sig) for role in ("engine", "renderer-0", "agent-0")
      for sig in ("SIGKILL", "SIGTERM")],
    *[("realtime", role, sig) for role in ("engine", "renderer-1", "agent-1")
      for sig in ("SIGKILL", "SIGTERM")],
    ("realtime-spine", "spine", "SIGKILL"), ("realtime-spine", "agent-0", "SIGTERM"),
    *[("spine", role, sig) for role in ("spine", "can-bus") for sig in ("SIGKILL", "SIGTERM")],
    ("batch", "batch-0", "SIGKILL"), ("batch", "batch-1", "SIGTERM"),
    ("gym-slot", "slot-0", "SIGKILL"), ("gym-slot", "slot-0", "SIGTERM"),
    ("gym", "renderer-0", "SIGSTOP"), ("batch", "batch-0", "SIGSTOP"),
    # Realtime: nobody waits, the watch sees the stopped process (every role).
    *[("realtime", role, "SIGSTOP") for role in ("engine", "renderer-0", "camera-1",
                                                 "agent-0")],
    *[("realtime-spine", role, "SIGSTOP") for role in ("spine", "engine", "agent-0")],
    ("realtime-slot", "slot-0", "SIGSTOP"), ("spine", "can-bus", "SIGSTOP"),
    ("spine", "spine", "SIGSTOP"),
]
# Every kind of process once by default, with one signal or the other; the rest of the
# matrix is marked slow (``pytest -m slow``, a step of CI of its own).
_FAST = {("gym", "engine", "SIGKILL"), ("gym", "renderer-0", "SIGTERM"),
         ("gym", "agent-0", "SIGKILL"), ("realtime", "engine", "SIGTERM"),
         ("realtime", "renderer-1", "SIGKILL"), ("realtime", "agent-1", "SIGTERM"),
         ("realtime-spine", "spine", "SIGKILL"), ("realtime-spine", "agent-0", "SIGTERM"),
         ("spine", "spine", "SIGKILL"), ("spine", "can-bus", "SIGTERM"),
         ("batch", "batch-0", "SIGKILL"), ("batch", "batch-1", "SIGTERM"),
         ("gym-slot", "slot-0", "SIGKILL"), ("realtime", "engine", "SIGSTOP")}
# (A stopped process takes the run's whole --timeout to be named: one SIGSTOP case, the
# stopped realtime engine, runs by default; the others, in the slow step.)
CASES = [c if c in _FAST else pytest.param(*c, marks=pytest.mark.slow) for c in _ALL]
FAULT_TIMEOUT_S = 120


@pytest.mark.timeout(FAULT_TIMEOUT_S)
@pytest.mark.parametrize(("target", "role", "sig"), CASES)
def test_a_killed_process_ends_the_run_cleanly(target: str, role: str, sig: str) -> None:
    seed = zlib.crc32(f"{target} {role} {sig}".encode())
    delay = 0.2 + (seed % 800) / 1000  # 0.2-1.0 s after the victim came up
    # How soon the run ends is a figure, measured by scripts/faults.py (a kill: within
    # DETECT_S; a SIGSTOP: the run's --timeout plus a second), not asserted here: on a
    # loaded machine a run ends later. What the test holds: a kill ended the run before
    # any wait's --timeout could have (the watch saw it: the error names the signal),
    # a SIGSTOP within that timeout plus DETECT_S.
    out = inject(TARGETS[target], role, sig, delay, stop_limit_s=TARGET_TIMEOUT_S + DETECT_S,
                 kill_limit_s=TARGET_TIMEOUT_S)
    assert out.clean, out.to_dict()


def ended(proc: psutil.Process) -> bool:
    """Gone, or a zombie (dead, not yet reaped)."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.alone  # its orphans must stay until its clean: no other network's sweep
@pytest.mark.timeout(FAULT_TIMEOUT_S)
@pytest.mark.parametrize("stop_one", [False, True], ids=["running", "one-stopped"])
def test_a_killed_supervisor_takes_its_children_along_and_clean_sweeps_up(
        stop_one: bool) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "dmxshm.cli", "run", "--steps", "1000000",
                             "--camera", "32x24"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        root = psutil.Process(proc.pid)
        deadline = time.monotonic() + 60
        while len(procs.dmx_children(root.pid)) < 3:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        children = procs.dmx_children(root.pid)
        assert [e for e in list_entries() if e.pid == proc.pid]  # its rings exist
        if stop_one:  # a stopped child never acts on a SIGTERM: it must die all the same
            os.kill(children[0].pid, signal.SIGSTOP)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        gone, alive = psutil.wait_procs(children, timeout=DETECT_S)
        # An orphan that died is reaped by whoever adopted it (pid 1 or a subreaper),
        # sometimes later: a zombie has ended all the same.
        assert not [c.pid for c in alive if not ended(c)]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    orphans = [e for e in list_entries() if e.pid == proc.pid]
    assert orphans  # nobody was left to unlink them...
    out = subprocess.run([sys.executable, "-m", "dmxshm.cli", "clean"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert not [e for e in list_entries() if e.pid == proc.pid]  # ...until clean did
