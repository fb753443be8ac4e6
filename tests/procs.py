"""Child processes for the multi-process tests.

Children are forked from multiprocessing's fork server (which imported numpy,
posix_ipc and the shared-memory layer once: a child starts in milliseconds, and
holds no inherited locks, mappings or semaphore handles, as in a real network),
or, where a test needs its child to be its own (``waitpid``, a zombie), started
with the ``spawn`` method: a fresh interpreter. They are
always stopped in a ``finally`` with :func:`stop`. Their pids are recorded so
that the /dev/shm leak check of ``conftest.py`` also claims what they create.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from typing import Any

CTX = mp.get_context("forkserver")
CTX.set_forkserver_preload(["numpy", "posix_ipc", "dmxshm.shm.ring", "dmxshm.shm.barrier"])
SPAWN = mp.get_context("spawn")
# How long a child gets to exit once told to, before it is killed.
JOIN_TIMEOUT_S = 10.0

started_pids: set[int] = set()
"""Every process the running test started (also through ``subprocess``: conftest.py)."""
swept_entries: list[Any] = []
"""What the running test's in-process networks swept at start (conftest.py checks it)."""


def start(target: Callable[..., Any], *args: Any, name: str | None = None,
          own: bool = False) -> BaseProcess:
    """Start ``target(*args)`` in a child and record its pid; ``own``: a child of this
    process (spawned), which it can wait for, stopped or dead, as its parent."""
    proc = (SPAWN if own else CTX).Process(target=target, args=args, name=name, daemon=True)
    proc.start()
    assert proc.pid is not None
    started_pids.add(proc.pid)
    return proc


def stop(*procs: BaseProcess) -> None:
    """Terminate (or kill) and reap every child; safe on dead, stopped or stopped-before ones."""
    live = [p for p in procs if not _closed(p) and p.pid is not None]
    for proc in live:
        if proc.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)  # type: ignore[arg-type]  # a stopped child ignores SIGTERM
            proc.terminate()
        proc.join(JOIN_TIMEOUT_S)
        if proc.is_alive():
            proc.kill()
            proc.join(JOIN_TIMEOUT_S)
    for proc in live:
        if proc.exitcode is not None:
            proc.close()  # frees its sentinel fd now rather than at garbage collection


def _closed(proc: BaseProcess) -> bool:
    try:
        proc.pid  # noqa: B018  # raises once close() was called
    except ValueError:
        return True
    return False


def dmx_children(pid: int | None = None) -> list[Any]:
    """The children a supervisor in process ``pid`` (default: this one) started, by
    their names (``dmx-<name>``): forked by its fork server (then the server's
    children) or spawned (its own); the fork server itself is not one."""
    import psutil

    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            name = child.name()
        except psutil.NoSuchProcess:
            continue
        if name.startswith("dmx-") and name != "dmx-forkserver":
            found.append(child)
    return found


def await_end(pid: int, timeout_s: float = 30.0) -> None:
    """Wait until process ``pid`` has exited, without reaping it: gone (its parent, a
    fork server, reaped it) or a zombie (its parent, this process, has not yet)."""
    import time

    import psutil

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.005)
    raise TimeoutError(f"process {pid} still runs after {timeout_s} s")
