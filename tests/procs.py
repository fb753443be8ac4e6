"""Child processes for the multi-process tests.

Children are started with the ``spawn`` method (a fresh interpreter: no
inherited locks, mappings or semaphore handles, as in a real network) and
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

CTX = mp.get_context("spawn")
# How long a child gets to exit once told to, before it is killed.
JOIN_TIMEOUT_S = 10.0

started_pids: set[int] = set()


def start(target: Callable[..., Any], *args: Any, name: str | None = None) -> BaseProcess:
    """Start ``target(*args)`` in a spawned child and record its pid."""
    proc = CTX.Process(target=target, args=args, name=name, daemon=True)
    proc.start()
    assert proc.pid is not None
    started_pids.add(proc.pid)
    return proc


def stop(*procs: BaseProcess) -> None:
    """Terminate (or kill) and reap every child; safe on dead or stopped ones."""
    for proc in procs:
        if proc.pid is None:
            continue
        if proc.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)  # a stopped child cannot act on SIGTERM
            proc.terminate()
        proc.join(JOIN_TIMEOUT_S)
        if proc.is_alive():
            proc.kill()
            proc.join(JOIN_TIMEOUT_S)
    for proc in procs:
        proc.close() if proc.pid is not None and proc.exitcode is not None else None
