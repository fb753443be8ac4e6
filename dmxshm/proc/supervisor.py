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

A child is a fresh interpreter (``python -m dmxshm.proc``) that never runs
the caller's ``__main__`` (see :mod:`dmxshm.proc.child`); its target is a
module-level function, its arguments pickle, and it reports exactly one
:class:`~dmxshm.proc.outcome.Outcome` through a socket that also tells the
supervisor, by its end-of-file, that the child is gone.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_any
from typing import Any

from dmxshm.proc.child import ChildSpec, ref
from dmxshm.proc.outcome import Cause, Outcome, root_cause
from dmxshm.settings import STOP_GRACE_S
from dmxshm.shm.peers import pid_stopped

# Once a child's channel is closed, how long its exit status may take to come.
_REAP_S = 1.0
# While stopping, how often to look for children still stopped (SIGSTOP).
_STOP_POLL_S = 0.05


class Child:
    """One child process, as its supervisor sees it.

    Attributes:
        name: ``engine``, ``renderer-0``, ``batch-1``...
        pid: its pid.
        report: the outcome it sent, once it did.
        ended_at: when its channel closed (it is gone), on the monotonic clock.
        hung_for_s: set by :meth:`mark_hung` when it was stopped for not ending.
    """

    def __init__(self, name: str, popen: subprocess.Popen[bytes], conn: Connection) -> None:
        self.name = name
        self.popen = popen
        self.pid: int = popen.pid
        self.conn = conn
        self.report: Outcome | None = None
        self.reported_at: float | None = None
        self.ended_at: float | None = None
        self.hung_for_s: float | None = None

    def __repr__(self) -> str:
        return f"<Child {self.name} pid {self.pid}>"

    # -- state -------------------------------------------------------------------
    @property
    def ended(self) -> bool:
        """Its channel closed: it exited (or is about to)."""
        return self.ended_at is not None

    @property
    def exitcode(self) -> int | None:
        """Its exit status (negative: the signal that killed it), None while it runs."""
        return self.popen.poll()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stopped(self) -> bool:
        """Stopped by SIGSTOP (or a debugger)."""
        return self.alive() and pid_stopped(self.pid)

    @property
    def outcome(self) -> Outcome | None:
        """How it ended: its report, or what its exit status or supervisor says; None
        while it runs without a report."""
        if self.hung_for_s is not None:
            return Outcome(name=self.name, pid=self.pid, cause=Cause.HUNG,
                           message=f"hung: no end {self.hung_for_s:.1f} s after the run's "
                                   "end; it was stopped")
        if self.report is not None:
            return self.report
        if self.ended:
            self.popen.poll()
            return Outcome.of_exit(self.name, self.pid, self.popen.returncode)
        return None

    def mark_hung(self, waited_s: float) -> None:
        """Record that it did not end within ``waited_s`` (then stop it)."""
        self.hung_for_s = waited_s

    # -- the channel ----------------------------------------------------------------
    def receive(self) -> bool:
        """Take what the channel holds without blocking; True if anything came."""
        if self.ended:
            return False
        try:
            if not self.conn.poll():
                return False
            message = self.conn.recv()
        except (EOFError, OSError):
            self._end()
            return True
        if isinstance(message, Outcome):
            self.report = message
            self.reported_at = time.monotonic()
        return True

    def _end(self) -> None:
        self.ended_at = time.monotonic()
        try:
            self.popen.wait(_REAP_S)
        except subprocess.TimeoutExpired:
            pass  # closed its channel but lives on: the exit status comes later
        if self.report is not None:
            self.report = self.report.with_exit(self.popen.returncode)

    def close(self) -> None:
        self.conn.close()


class Supervisor:
    """Starts children, gathers their outcomes, names the root cause, stops them.

    Every exit path calls :meth:`close` (also as a context manager), which
    stops what still runs: SIGTERM (waking stopped ones), then SIGKILL.
    """

    def __init__(self) -> None:
        self.children: list[Child] = []
        self._env = _child_env()

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, name: str, target: Callable[..., Any], *args: Any, cpu: int | None = None,
              on_stop: Callable[[int, Any], Any] | None = None) -> Child:
        """Start ``target(*args)`` in a child called ``dmx-<name>``.

        Args:
            name: its name in reports, ps and profiles.
            target: a module-level function (see :func:`dmxshm.proc.child.ref`).
            args: its arguments; they pickle.
            cpu: pin it to this CPU.
            on_stop: a module-level handler of SIGINT and SIGTERM (default:
                SIGINT ignored, SIGTERM unwinds with Terminated).

        Raises:
            ValueError: ``target`` or ``on_stop`` is not importable by a child.
        """
        spec = ChildSpec(name=name, target=ref(target), args=tuple(args), cpu=cpu,
                         on_stop=ref(on_stop) if on_stop is not None else None)
        payload = pickle.dumps(spec)
        mine, theirs = socket.socketpair()
        try:
            popen = subprocess.Popen(
                [sys.executable, "-m", "dmxshm.proc", str(theirs.fileno()), name],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=self._env,
                close_fds=True)
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        conn = Connection(mine.detach())
        child = Child(name, popen, conn)
        self.children.append(child)
        try:
            conn.send({"sys_path": list(sys.path)})
            conn.send_bytes(payload)
        except OSError:
            pass  # it died at once: its outcome tells how
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
        """Children whose channel is still open."""
        return [c for c in self.children if not c.ended]

    def wait(self, timeout_s: float) -> list[Child]:
        """Wait up to ``timeout_s`` for news from any child; returns those with news."""
        live = {c.conn: c for c in self.running()}
        if not live:
            return []
        ready = wait_any(list(live), timeout=timeout_s)
        news = []
        for conn in ready:
            child = live[conn]  # type: ignore[index]
            while child.receive():  # a report and the end may both be there
                if child not in news:
                    news.append(child)
        return news

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
                done.append((outcome, c.ended_at or c.reported_at or float("inf")))
        cause = root_cause(done)
        if cause is not None and cause.cause.rank > 0:
            stopped = next((c for c in self.children if c.name not in skip and c.stopped()),
                           None)
            if stopped is not None:
                return Outcome(name=stopped.name, pid=stopped.pid, cause=Cause.STOPPED,
                               message="stopped (SIGSTOP?)")
        return cause

    # -- stopping -------------------------------------------------------------------
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
            while c.receive():
                pass

    def close(self) -> None:
        """Stop every child still running and close every channel; always returns."""
        try:
            self.stop()
        finally:
            for c in self.children:
                c.close()


def _wake_and_terminate(child: Child) -> None:
    """SIGCONT, then SIGTERM. A stopped process must wake to die, and wake first:
    a SIGTERM sent while it was stopped was seen lost on resume (it was then
    killed 2 s later instead of unwinding)."""
    try:
        os.kill(child.pid, signal.SIGCONT)
        child.popen.terminate()
    except ProcessLookupError:
        pass


def _child_env() -> dict[str, str]:
    """The environment of a child: ours, with dmxshm importable by ``-m``."""
    env = dict(os.environ)
    # The folder that holds the dmxshm package: three levels above this file.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([root, *paths])
    return env
