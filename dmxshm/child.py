"""The start of every child process of a network: name, pin, run, report.

A child runs one role (``engine``, ``renderer``, ``agent``) and sends
exactly one message to the supervisor through its pipe: ``("ok", result)``
or ``("error", report)`` with the exception, its traceback and, for a dead
peer, who died. Its exit code says the same (0 or 1), so a child killed by a
signal (which sends nothing) is told apart by the supervisor.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any

import psutil

from dmxshm.errors import PeerDiedError

_PR_SET_NAME = 15


@dataclass(frozen=True)
class ErrorReport:
    """What went wrong in a child, in a form that pickles."""

    role: str
    pid: int
    kind: str
    message: str
    traceback: str
    peer_role: str | None = None
    peer_pid: int | None = None


def role_name(role: str, index: int) -> str:
    """``engine``, ``renderer-0``, ``agent-1``..."""
    return role if role in ("engine", "spine") else f"{role}-{index}"


def set_process_name(name: str) -> None:
    """Show ``name`` in ps/top/psutil (Linux: the 15-byte comm field)."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return
    try:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        libc.prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass


_PR_SET_PDEATHSIG = 1


class Terminated(SystemExit):
    """This child was told to stop by a signal (SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum

    def __str__(self) -> str:
        return f"signal {self.signum} ({signal.Signals(self.signum).name})"


def describe_exit(exitcode: int | None) -> str:
    """``signal 9 (SIGKILL)`` for a process killed by a signal, else ``exit code N``."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown"
        return f"signal {-exitcode} ({name})"
    return f"exit code {exitcode}"


def stop_processes(procs: list[Any], grace_s: float) -> None:
    """SIGTERM every live one of ``procs`` (waking stopped ones); SIGKILL those
    still there ``grace_s`` later."""
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
            try:
                os.kill(proc.pid, signal.SIGCONT)  # a stopped process must wake to die
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace_s
    for proc in procs:
        proc.join(max(deadline - time.monotonic(), 0.0))
        if proc.is_alive():
            proc.kill()
            proc.join(grace_s)


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _die_with_parent() -> None:
    """Ask the kernel for SIGTERM when the supervisor dies, even by SIGKILL."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return
    try:
        ctypes.CDLL(libc_name).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


# Spawning a child and building its pybullet world takes seconds on a busy machine.
START_TIMEOUT_S = 60.0


def wait_for_start(plan: Any, role: str, index: int) -> float | None:
    """Block until every process of the network is set up (the start barrier).

    Then run the floor rounds if asked (see :mod:`dmxshm.floor`); returns the
    floor's seconds per round in the engine, None elsewhere.
    """
    from dmxshm.floor import run_floor
    from dmxshm.shm.barrier import Barrier

    barrier = Barrier.attach(plan.start_barrier, party=plan.party(role, index),
                             role=role_name(role, index))
    try:
        barrier.wait(max(START_TIMEOUT_S, plan.config.wait_timeout_s))
    finally:
        barrier.close()
    return run_floor(plan, role, index)


def child_main(role: str, index: int, plan: Any, conn: Any, parent_pid: int) -> None:
    """Entry point of a spawned child (a module-level function: it pickles)."""
    from dmxshm import agent, engine
    from dmxshm.matrix import renderer

    name = role_name(role, index)
    set_process_name(f"dmx-{name}")
    # Ctrl-C goes to the whole process group; the supervisor alone handles
    # it and stops the children with SIGTERM, which unwinds them cleanly.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminate)
    _die_with_parent()
    if os.getppid() != parent_pid:  # the supervisor died before the line above
        sys.exit(1)
    from dmxshm.spine.network_spine import run_network_spine

    mains = {"engine": engine.run_engine, "renderer": renderer.run_renderer,
             "agent": agent.run_agent, "spine": run_network_spine}
    try:
        cpu = plan.config.pins.get(name)
        if cpu is not None:
            psutil.Process().cpu_affinity([cpu])
        result = mains[role](plan, index)
    except BaseException as exc:  # noqa: BLE001  every failure must reach the supervisor
        report = ErrorReport(
            role=name, pid=psutil.Process().pid, kind=type(exc).__name__, message=str(exc),
            traceback=traceback.format_exc(),
            peer_role=exc.role if isinstance(exc, PeerDiedError) else None,
            peer_pid=exc.pid if isinstance(exc, PeerDiedError) else None,
        )
        try:
            conn.send(("error", report))
        finally:
            conn.close()
        sys.exit(1)
    conn.send(("ok", result))
    conn.close()
