"""The start of every child process: :func:`main` with ``FD NAME``.

A child is a fresh interpreter started by :class:`~dmxshm.proc.supervisor.Supervisor`
(``python -c`` with the parent's ``sys.path`` and interpreter flags, or by
hand ``python -m dmxshm.proc FD NAME``) that never runs the user's
``__main__`` again (``multiprocessing``'s spawn re-imports it, so a script
without an ``if __name__ == "__main__":`` guard, ``python -c`` or a script fed
on standard input could not start children). Its one channel to the
supervisor is the socket ``FD``: it reads its :class:`ChildSpec` there, and
writes back exactly one :class:`~dmxshm.proc.outcome.Outcome`.

In order, a child:

1. ignores SIGINT (Ctrl-C reaches the whole process group; the supervisor
   alone handles it and stops its children with SIGTERM) and turns SIGTERM
   into :class:`~dmxshm.proc.outcome.Terminated`, which unwinds ``with`` and
   ``finally`` blocks (or installs the spec's own stop handler);
2. asks the kernel for SIGTERM when its supervisor dies (even by SIGKILL);
3. pins itself to its CPU, if it has one;
4. takes its name (``dmx-<name>``, seen by ps and psutil): once a child is
   found by its name, its signal handling is in place;
5. runs its target and reports the outcome.
"""

from __future__ import annotations

import atexit
import importlib
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from dmxshm.proc.outcome import Cause, Outcome, Terminated
from dmxshm.proc.prctl import die_with_parent, set_process_name
from dmxshm.shm import signals


@dataclass(frozen=True)
class ChildSpec:
    """What a child runs.

    Attributes:
        name: its name (``renderer-0``); the process is called ``dmx-<name>``.
        target: ``module:qualname`` of a module-level function.
        args: its positional arguments (they pickle).
        cpu: the CPU to pin it to (None: as its parent).
        on_stop: ``module:qualname`` of a handler for SIGINT and SIGTERM
            (None: SIGINT ignored, SIGTERM raises Terminated).
        parent_pid: its supervisor's pid.
        death_signal: what the kernel sends it when its supervisor dies
            (:func:`~dmxshm.proc.prctl.die_with_parent`).
    """

    name: str
    target: str
    args: tuple[Any, ...] = ()
    cpu: int | None = None
    on_stop: str | None = None
    parent_pid: int = field(default_factory=os.getpid)
    death_signal: int = int(signal.SIGKILL)


def ref(fn: Callable[..., Any]) -> str:
    """``module:qualname`` of a module-level function, importable by a child.

    Raises:
        ValueError: ``fn`` lives in ``__main__`` or inside a function, where a
            child (which never runs ``__main__``) cannot find it.
    """
    module, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or module == "__main__" or "<" in qual:
        raise ValueError(f"{fn!r} cannot run in a child process: define it at the top "
                         "level of an importable module (not in __main__, not a lambda "
                         "or a nested function)")
    return f"{module}:{qual}"


def resolve(reference: str) -> Any:
    """The object named ``module:qualname``."""
    module, _, qual = reference.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def parent_gone(parent_pid: int, wait_s: float = 0.0) -> bool:
    """Whether the process ``parent_pid``, this process's parent, died (or is dying).

    ``os.getppid()`` alone is not enough: a multithreaded parent killed with
    SIGKILL exits thread by thread, and the kernel first hands this process
    to another of its threads (and sends the death signal at each handover),
    so for a moment the parent pid is still the dying one's. A zombie
    parent counts as gone; with ``wait_s``, a parent still running is
    watched that long (a death signal may come before its threads are all
    gone).
    """
    import psutil  # here: not on every child's start-up path

    # A child of the fork server watches the server's pid for its reparenting (the
    # server dies with the supervisor), and the supervisor's for its state.
    parent = _parent_pid if parent_pid == _supervisor_pid and _parent_pid else parent_pid
    deadline = time.monotonic() + wait_s
    while True:
        if os.getppid() != parent:
            return True
        try:
            if psutil.Process(parent_pid).status() in (psutil.STATUS_ZOMBIE,
                                                       psutil.STATUS_DEAD):
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def ignore_stop_signals() -> None:
    """From here on SIGINT and SIGTERM do nothing (a clean-up that must finish).

    A handler already tripped at the C level but not yet run is dropped too
    (CPython skips it once the handler is SIG_IGN); a Terminated raised
    while this runs is retried.
    """
    while True:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            return
        except Terminated:
            continue


# This child's supervisor and the process it was started by (the supervisor, or
# the fork server that forked it for its supervisor: dmxshm.proc.forkserver).
_supervisor_pid: int | None = None
_parent_pid: int | None = None


def supervisor_pid() -> int:
    """The pid of the process that supervises this child (its parent's, where this
    process is not a dmxshm child)."""
    return _supervisor_pid if _supervisor_pid is not None else os.getppid()


def main(argv: list[str], parent_pid: int | None = None) -> int:
    """Run one child (``argv``: its channel's file descriptor and its name); returns
    its exit status. Whatever fails, from reading its spec on, is reported.
    ``parent_pid``: the process that started it, where that is not its supervisor
    (the fork server)."""
    global _supervisor_pid, _parent_pid
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SIGTERM: dmxshm's handler, raising Terminated where the child is (a
    # semaphore wait records it and acts itself: no wait pays for holding a
    # handler's exception back from posix_ipc; dmxshm.shm.signals).
    # An ignored SIGTERM is inherited across exec (a parent under `trap '' TERM`):
    # the child must still stop when its supervisor says so.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not signals.install(exit_with=Terminated):
        raise RuntimeError("dmxshm's SIGTERM handler could not be installed in a child")
    fd, name = int(argv[0]), argv[1]
    os.set_inheritable(fd, False)  # the child's own children must not hold its channel
    conn = Connection(fd)
    pid = os.getpid()
    try:
        try:
            spec: ChildSpec = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return 1  # the supervisor is gone before it told us anything
        if spec.on_stop is not None:
            handler = resolve(spec.on_stop)
            signal.signal(signal.SIGINT, handler)
            signal.signal(signal.SIGTERM, handler)
        _supervisor_pid = spec.parent_pid
        _parent_pid = parent_pid if parent_pid is not None else spec.parent_pid
        die_with_parent(spec.death_signal)
        if os.getppid() != _parent_pid:  # the supervisor died before the line above
            return 1
        if spec.cpu is not None:
            os.sched_setaffinity(0, [spec.cpu])
        set_process_name(f"dmx-{spec.name}")
        result = resolve(spec.target)(*spec.args)
        outcome = Outcome(name=name, pid=pid, cause=Cause.OK, result=result)
    except BaseException as exc:  # noqa: BLE001  every failure must reach the supervisor
        outcome = Outcome.of_exception(name, pid, exc, traceback.format_exc())
    # A stop signal now would cut the report in half: the child ends anyway.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        try:
            conn.send(outcome)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            conn.send(Outcome.of_exception(name, pid, exc, traceback.format_exc()))
    except OSError:
        pass  # the supervisor is gone: nobody to tell
    finally:
        conn.close()
    return 0 if outcome.ok else 1


def run(argv: list[str], parent_pid: int | None = None) -> None:
    """The child's whole life: :func:`main`, then its end without the interpreter's
    finalisation. Once its outcome is sent nothing is left to do, and tearing down
    numpy, pybullet and numba module by module took a few hundred milliseconds of a
    run's end (as multiprocessing's children, it ends with ``os._exit``), after the
    functions registered with :mod:`atexit` (a user's agent's, coverage's)."""
    code = main(argv, parent_pid)
    atexit._run_exitfuncs()  # what the code run here asked for at exit (a user's agent's)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)

