"""Start, watch and stop child processes: the one process layer of dmxshm.

The network, the batch and the spine all start their processes here::

    sup = Supervisor()
    try:
        engine = sup.start("engine", run_engine, plan, 0, cpu=0)
        ...
        while sup.running():
            sup.wait(0.05)              # outcomes arrive as children end
            failure = sup.failure()     # the root cause, if any child failed
    finally:
        sup.close()                     # SIGTERM, then SIGKILL, whatever is left

A child is forked from this process's fork server (:mod:`dmxshm.proc.forkserver`:
a fresh interpreter with dmxshm's modules imported), or is itself a fresh
interpreter (``python -c <boot>``); either way it never runs
the caller's ``__main__`` (see :mod:`dmxshm.proc.child`); its target is a
module-level function, its arguments pickle, and it reports exactly one
:class:`~dmxshm.proc.outcome.Outcome` through a socket that also tells the
supervisor, by its end-of-file, that the child is gone.
"""

from __future__ import annotations

import io
import os
import pickle
import signal
import socket
import struct
import subprocess
import time
import types
from collections.abc import Callable, Iterable
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_any
from typing import Any

from dmxshm.proc import forkserver
from dmxshm.proc.child import ChildSpec, ref
from dmxshm.proc.forkserver import Forked
from dmxshm.proc.outcome import Cause, Outcome, root_cause
from dmxshm.settings import START_TIMEOUT_S, STOP_GRACE_S
from dmxshm.shm.peers import pid_stopped

# While a child's channel is closed but its exit status not yet in, how often to look.
_EXIT_POLL_S = 0.01
# While stopping, how often to look for children still stopped (SIGSTOP).
_STOP_POLL_S = 0.05


class Child:
    """One child process, as its supervisor sees it.

    A child has ended once its exit status is in (``popen.poll()``), whatever
    its channel says: a process it forked may hold the channel open after it.

    Attributes:
        name: ``engine``, ``renderer-0``, ``batch-1``...
        pid: its pid.
        report: the outcome it sent, once it did.
        reported_at, ended_at: when its report came and when its end was seen
            (monotonic clock).
        hung_for_s: set by :meth:`mark_hung` when it was stopped for not ending.
        stalled_for_s: set by :meth:`mark_stalled` when it was seen stopped
            (SIGSTOP) for longer than its watch allows.
    """

    def __init__(self, name: str, popen: subprocess.Popen[bytes] | Forked,
                 conn: Connection) -> None:
        self.name = name
        self.popen = popen
        self.pid: int = popen.pid
        self.conn = conn
        self.eof = False
        self.report: Outcome | None = None
        self.reported_at: float | None = None
        self.ended_at: float | None = None
        self.hung_for_s: float | None = None
        self._hung_why = ""
        self.stalled_for_s: float | None = None

    def __repr__(self) -> str:
        return f"<Child {self.name} pid {self.pid}>"

    # -- state -------------------------------------------------------------------
    @property
    def ended(self) -> bool:
        """Its end was seen (by :meth:`refresh`)."""
        return self.ended_at is not None

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stopped(self) -> bool:
        """Stopped by SIGSTOP (or a debugger)."""
        return self.alive() and pid_stopped(self.pid)

    @property
    def first_seen(self) -> float:
        """When its report or its end was first seen (for ranking); inf if neither."""
        times = [t for t in (self.reported_at, self.ended_at) if t is not None]
        return min(times) if times else float("inf")

    @property
    def outcome(self) -> Outcome | None:
        """How it ended: its report (with its exit status once in), or what its exit
        status or its supervisor says; None while it runs without a report.

        A child that reported success but then exited non-zero (a crash while
        tearing down, a kill) failed: its exit status is its outcome.
        """
        if self.stalled_for_s is not None:
            return Outcome(name=self.name, pid=self.pid, cause=Cause.STOPPED,
                           message=f"stopped (SIGSTOP?) for {self.stalled_for_s:.1f} s")
        if self.hung_for_s is not None:
            return Outcome(name=self.name, pid=self.pid, cause=Cause.HUNG,
                           message=self._hung_why or f"hung: no end {self.hung_for_s:.1f} s "
                                                     "after the run's end; it was stopped")
        code = self.popen.poll()
        if self.report is not None:
            if self.report.ok and code not in (0, None):
                return Outcome.of_exit(self.name, self.pid, code, reported=True)
            return self.report.with_exit(code)
        if self.ended:
            return Outcome.of_exit(self.name, self.pid, code)
        return None

    def mark_hung(self, waited_s: float, why: str = "") -> None:
        """Record that it did not end within ``waited_s`` (then stop it); ``why``: what
        its outcome says instead of that (it made no progress, say)."""
        self.hung_for_s = waited_s
        self._hung_why = why

    def mark_stalled(self, stopped_s: float) -> None:
        """Record that it was seen stopped for ``stopped_s`` on end (then stop it)."""
        self.stalled_for_s = stopped_s

    # -- news -------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Take what its channel holds and see whether it ended, without blocking;
        True if anything new came."""
        if self.ended:
            return False
        # The exit status first: a process that has exited wrote all it ever will.
        exited = self.popen.poll() is not None
        news = False
        while not self.eof:
            try:
                if not self.conn.poll():
                    break
                message = self.conn.recv()
            except (EOFError, OSError):
                self.eof = True
                break
            if isinstance(message, Outcome):
                self.report, self.reported_at = message, time.monotonic()
                news = True
        if exited:
            self.ended_at = time.monotonic()
            news = True
        return news

    def close(self) -> None:
        self.conn.close()


class Supervisor:
    """Starts children, gathers their outcomes, names the root cause, stops them.

    Every exit path calls :meth:`close` (also as a context manager), which
    stops what still runs: SIGTERM (waking stopped ones), then SIGKILL.
    """

    def __init__(self) -> None:
        self.children: list[Child] = []

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, name: str, target: Callable[..., Any], *args: Any, cpu: int | None = None,
              on_stop: Callable[[int, Any], Any] | None = None,
              death_signal: int = signal.SIGKILL) -> Child:
        """Start ``target(*args)`` in a child called ``dmx-<name>``.

        Args:
            name: its name in reports, ps and profiles.
            target: a module-level function (see :func:`dmxshm.proc.child.ref`).
            args: its arguments; they pickle, and nothing in them is defined in
                ``__main__`` (a child never runs it).
            cpu: pin it to this CPU.
            on_stop: a module-level handler of SIGINT and SIGTERM (default:
                SIGINT ignored, SIGTERM unwinds with Terminated).
            death_signal: what the kernel sends the child when this process dies
                (even by SIGKILL). SIGKILL by default: a stopped child never acts on
                another signal, and would stay. SIGTERM for a child that must clean
                up after its supervisor (a batch worker unlinks its batch's objects);
                stopped then, it does so once it is continued.

        Raises:
            ValueError: ``target``, ``on_stop`` or something in ``args`` cannot
                reach a child (defined in ``__main__``, a lambda, nested).
        """
        spec = ChildSpec(name=name, target=ref(target), args=tuple(args), cpu=cpu,
                         on_stop=ref(on_stop) if on_stop is not None else None,
                         death_signal=int(death_signal))
        payload = _dumps(spec)
        mine, theirs = socket.socketpair()
        # A child stuck before it reads its spec must not block us: sends time out.
        mine.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                        struct.pack("ll", int(START_TIMEOUT_S), 0))
        try:
            flags = interpreter_flags()
            popen: subprocess.Popen[bytes] | Forked | None = None
            if forkserver.wanted():
                popen = forkserver.fork(name, theirs.fileno(), spec.target, flags)
            if popen is None:
                popen = forkserver.spawn(_BOOT, theirs.fileno(), name, flags=flags)
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        child = Child(name, popen, Connection(mine.detach()))
        self.children.append(child)
        try:
            child.conn.send_bytes(payload)
        except OSError:
            pass  # it died at once, or never read: its outcome tells how
        return child

    def child(self, name: str) -> Child:
        """The child called ``name``."""
        for c in self.children:
            if c.name == name:
                return c
        raise KeyError(name)

    def pids(self) -> dict[str, int]:
        return {c.name: c.pid for c in self.children}

    # -- watching -----------------------------------------------------------------
    def running(self) -> list[Child]:
        """Children whose end was not seen yet."""
        return [c for c in self.children if not c.ended]

    def wait(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for news from any child (a report, an end)."""
        running = self.running()
        if not running:
            return
        listening = [c.conn for c in running if not c.eof]
        # A closed channel is always ready: its child's exit status is polled instead.
        if len(listening) < len(running):
            timeout_s = min(timeout_s, _EXIT_POLL_S)
        if listening:
            wait_any(listening, timeout=timeout_s)
        else:
            time.sleep(timeout_s)
        for child in running:
            child.refresh()

    def failure(self, exclude: Iterable[str] = ()) -> Outcome | None:
        """The root cause among the children that failed, if any did.

        Ranked by :func:`~dmxshm.proc.outcome.root_cause`. When every failure
        only reports a peer's (or its own) trouble and some child is stopped
        (SIGSTOP), the stopped one is the cause: the others timed out waiting
        on it.
        """
        skip = set(exclude)
        done = []
        for c in self.children:
            if c.name in skip:
                continue
            outcome = c.outcome
            if outcome is not None and not outcome.ok:
                done.append((outcome, c.first_seen))
        cause = root_cause(done)
        if cause is not None and cause.cause.rank > 0:
            stopped = next((c for c in self.children if c.name not in skip and c.stopped()),
                           None)
            if stopped is not None:
                return Outcome(name=stopped.name, pid=stopped.pid, cause=Cause.STOPPED,
                               message="stopped (SIGSTOP?)")
        return cause

    # -- stopping -------------------------------------------------------------------
    def resume_stalled(self) -> None:
        """SIGCONT every child marked stalled (:meth:`Child.mark_stalled`) or found
        stopped, and still there: it goes on until it is stopped (the run's failure
        was named before: a stall, or its peers' timeouts)."""
        for c in self.children:
            if c.alive() and (c.stalled_for_s is not None or c.stopped()):
                try:
                    os.kill(c.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass

    def stop(self, children: Iterable[Child] | None = None,
             grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM every live one of ``children`` (default: all), waking stopped ones;
        SIGKILL those still there ``grace_s`` later."""
        procs = [c for c in (self.children if children is None else children) if c.alive()]
        for c in procs:
            _wake_and_terminate(c)
        deadline = time.monotonic() + grace_s
        while (left := [c for c in procs if c.alive()]) and time.monotonic() < deadline:
            try:
                left[0].popen.wait(min(_STOP_POLL_S, max(deadline - time.monotonic(), 0.0)))
            except subprocess.TimeoutExpired:
                pass
            for c in left:
                if c.stopped():  # the SIGCONT raced a SIGSTOP still on its way: again
                    _wake_and_terminate(c)
        for c in procs:
            if c.alive():
                c.popen.kill()
                try:
                    c.popen.wait(grace_s)
                except subprocess.TimeoutExpired:
                    pass  # unkillable (in the kernel): nothing more to do
        for c in procs:
            c.refresh()

    def close(self) -> None:
        """Stop every child still running and close every channel; always returns."""
        try:
            self.stop()
        finally:
            for c in self.children:
                c.close()
            if any(isinstance(c.popen, Forked) for c in self.children):
                forkserver.learn()  # nothing of ours runs: the server may import now


def _wake_and_terminate(child: Child) -> None:
    """SIGCONT, then SIGTERM. A stopped process must wake to die, and wake first:
    a SIGTERM sent while it was stopped was seen lost on resume (it was then
    killed 2 s later instead of unwinding)."""
    try:
        os.kill(child.pid, signal.SIGCONT)
        child.popen.terminate()
    except ProcessLookupError:
        pass


# A child's first line: the parent's sys.path (so it imports what the parent
# would, its working folder included), the mark that tells dmxshm to register its
# gymnasium envs only once gymnasium is imported (a role does not import it; see
# dmxshm/__init__.py), then dmxshm's child entry. A fresh interpreter started this
# way never runs the caller's __main__.
_BOOT = ("import sys; sys.path[:] = {!r}; sys._dmxshm_child = True; "
         "from dmxshm.proc.child import run; run(sys.argv[1:])")


def interpreter_flags() -> list[str]:
    """The parent's -O, -W, -X, -E, -I... flags, as multiprocessing passes them on."""
    flags = getattr(subprocess, "_args_from_interpreter_flags", None)
    return list(flags()) if flags is not None else []


class _Pickler(pickle.Pickler):
    """Refuses what a child cannot import: classes and functions of ``__main__``."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (type, types.FunctionType)) and \
                getattr(obj, "__module__", None) == "__main__":
            raise ValueError(f"{obj.__qualname__} is defined in __main__, which a child "
                             "process never runs: move it to an importable module")
        return NotImplemented


def _dumps(spec: ChildSpec) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(spec)
    return buf.getvalue()
