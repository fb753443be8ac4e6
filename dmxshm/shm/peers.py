"""Who is on the other side of a wait, and is it still alive.

POSIX semaphores do not know their owners (posix_ipc#53), so a process that
dies while others wait on it would leave them waiting forever. Every shared
object therefore records the pid, the start time and the role of each process
that uses it; a wait that times out asks :func:`peer_state` about each one and
names the one that is gone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

# Two reads of the same process's start agree far better than this (they are
# the same clock ticks), a reused pid differs by far more.
_CTIME_TOLERANCE_S = 0.05
_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

ALIVE = "alive"
STOPPED = "stopped"
DEAD = "dead"


@dataclass(frozen=True)
class Peer:
    """A process taking part in a shared object.

    Attributes:
        role: what it does there, e.g. ``"writer"`` or ``"renderer-1"``.
        pid: its process id (0 when nobody has joined yet).
        create_time: its start time (:func:`process_create_time`), to tell a reused
            pid apart.
    """

    role: str
    pid: int
    create_time: float

    def describe(self) -> str:
        """Return ``role (pid N, state)`` for messages."""
        if self.pid == 0:
            return f"{self.role} (not attached yet)"
        return f"{self.role} (pid {self.pid}, {peer_state(self)})"


def me(role: str) -> Peer:
    """Return the :class:`Peer` record of the calling process."""
    pid = os.getpid()
    return Peer(role=role, pid=pid, create_time=process_create_time(pid))


def process_create_time(pid: int) -> float:
    """Start time of ``pid`` (0.0 when unknown): on Linux, seconds since boot.

    Not psutil's ``create_time()``, which adds the boot time as the wall clock
    tells it now (``btime`` in /proc/stat): on a machine whose clock is being
    corrected (a VM's, NTP slewing it) that whole second moves now and then, and
    a live writer recorded before the move looked like another process after it
    (a reused pid: "died"). The start in clock ticks since boot never moves.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # after the command name (which may hold spaces and parentheses): field 22
        return int(stat[stat.rindex(b")") + 2:].split()[19]) / _TICKS_PER_S
    except FileNotFoundError:
        return 0.0
    except (OSError, ValueError, IndexError):
        pass
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0.0


def peer_state(peer: Peer) -> str:
    """Return ``"alive"``, ``"stopped"`` (SIGSTOP) or ``"dead"``.

    A zombie (killed, not yet reaped) counts as dead, and so does a process
    whose pid was reused by a newer process.
    """
    if peer.pid <= 0:
        return DEAD
    try:
        proc = psutil.Process(peer.pid)
        status = proc.status()
        if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return DEAD
        if peer.create_time and \
                abs(process_create_time(peer.pid) - peer.create_time) > _CTIME_TOLERANCE_S:
            return DEAD
        if status in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP):
            return STOPPED
        return ALIVE
    except psutil.NoSuchProcess:
        return DEAD
    except psutil.AccessDenied:
        # Another user's live process: it exists, we cannot look closer.
        return ALIVE


def pid_alive(pid: int) -> bool:
    """True when ``pid`` names a live (or stopped) process, not a zombie."""
    return peer_state(Peer(role="", pid=pid, create_time=0.0)) != DEAD


def pid_stopped(pid: int | None) -> bool:
    """True when ``pid`` names a process stopped by a signal (SIGSTOP)."""
    return pid is not None and peer_state(Peer(role="", pid=pid, create_time=0.0)) == STOPPED
