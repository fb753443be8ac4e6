"""How a supervisor watches its children, and names the root cause when they fail.

The processes of a run fail together: when one dies, the others soon fail
too, each with the error it saw (a peer died, a ring closed, a wait timed
out). The first failure a supervisor sees is therefore not always where the
trouble started: the dead one's end and its peers' reports come in any
order, often in one batch. So after the first failure a :class:`Watch`
waits a short report grace for the others' outcomes, and only then names
the root cause (:meth:`~dmxshm.proc.supervisor.Supervisor.failure`, ranked by
:func:`~dmxshm.proc.outcome.root_cause`: the child killed, stopped or hung
before the one that raised, before the ones that only saw a peer fail)::

    watch = Watch(sup, WatchPolicy(tolerated=frozenset({"spine-agent"})))
    while watch.step():             # news or the interval, then the caller's own work
        on_progress()
    cause = watch.failure()         # None: every child that counts succeeded
    if cause is not None:
        raise RunError(explain(cause))

One policy for every run that has children (the network, the spine, the
batch): each configures it, none rewrites it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from dmxshm.errors import DmxError
from dmxshm.proc.outcome import Cause, Outcome
from dmxshm.proc.supervisor import Supervisor
from dmxshm.settings import STOP_GRACE_S

WATCH_INTERVAL_S = 0.05
"""The longest one wait for news lasts: the watcher's own work (progress,
profile samples, signals) runs between two waits."""

REPORT_GRACE_S = 0.3
"""After the first failure, how long the others' outcomes are awaited, so the
root cause (the process that died first) is named, not its waiting peers. A
peer notices a death within :data:`dmxshm.settings.LIVENESS_POLL_S`."""


@dataclass(frozen=True)
class WatchPolicy:
    """How a run's children are watched.

    Attributes:
        interval_s: the longest one :meth:`Watch.step` waits for news.
        report_grace_s: after the first failure, how long the others' outcomes
            are awaited before the watch ends.
        tolerated: children whose failure does not fail the run (a spine's
            agent: the spine goes on without it); they never start the grace
            and are never the root cause.
        stop_first: children stopped before the others when the run is stopped
            (a network's spine: it sends its stops, which needs the engine
            still there), each given ``stop_first_grace_s`` to end.
        end_grace_s: after those, how long the others get to end by themselves
            (their whole results, no stop racing their ends) before they are
            stopped.
        stall_limit_s: a child seen stopped (SIGSTOP, a debugger) for longer
            than this fails the run, named as the cause. Where its peers wait
            for it (gym mode, a batch) they time out too; where nobody waits
            (realtime) this is the only thing that notices. None: not watched.
    """

    interval_s: float = WATCH_INTERVAL_S
    report_grace_s: float = REPORT_GRACE_S
    tolerated: frozenset[str] = frozenset()
    stop_first: tuple[str, ...] = ()
    stop_first_grace_s: float = STOP_GRACE_S
    end_grace_s: float = 0.0
    stall_limit_s: float | None = None


class Watch:
    """One watch of a supervisor's children under a :class:`WatchPolicy`.

    Attributes:
        supervisor: whose children are watched.
        policy: how.
        failed_at: when the first failure (of a child not tolerated) was seen
            (monotonic clock), None while there is none.
    """

    def __init__(self, supervisor: Supervisor, policy: WatchPolicy | None = None) -> None:
        self.supervisor = supervisor
        self.policy = policy if policy is not None else WatchPolicy()
        self.failed_at: float | None = None
        self._stopped_since: dict[str, float] = {}

    @property
    def failing(self) -> bool:
        """A failure was seen: the watch only gives the others their report grace."""
        return self.failed_at is not None

    def step(self) -> bool:
        """Wait up to ``interval_s`` for news (a report, an end); whether to go on.

        Returns:
            False once every child has ended, or once the report grace after
            the first failure is over; True otherwise.
        """
        sup = self.supervisor
        if not sup.running():
            return False
        sup.wait(self.policy.interval_s)
        now = time.monotonic()
        if self.failed_at is None and self.policy.stall_limit_s is not None \
                and self._look_for_stalls(now, self.policy.stall_limit_s):
            # No report grace: nothing else failed, so the stalled one is the cause.
            self.failed_at = now
            return False
        if self.failed_at is None and self.failure() is not None:
            self.failed_at = now
        if self.failed_at is not None and now - self.failed_at >= self.policy.report_grace_s:
            return False
        return bool(sup.running())

    def _look_for_stalls(self, now: float, limit_s: float) -> bool:
        """Mark a child stopped for longer than ``limit_s`` (since it was first seen
        stopped, and stopped at every look since) as the run's failure; whether one
        was."""
        stalled = False
        for child in self.supervisor.running():
            if child.name in self.policy.tolerated or child.report is not None:
                continue
            if not child.stopped():
                self._stopped_since.pop(child.name, None)
                continue
            since = self._stopped_since.setdefault(child.name, now)
            if now - since > limit_s:
                child.mark_stalled(now - since)
                stalled = True
        return stalled

    def stop_first(self) -> bool:
        """Stop the policy's ``stop_first`` children (each given its grace), in order;
        whether there was any."""
        sup = self.supervisor
        first = [c for name in self.policy.stop_first for c in sup.children
                 if c.name == name]
        if first:  # those stopped first may need the others (a spine's stops go to
            sup.resume_stalled()  # its engine): a child stalled by SIGSTOP goes on
        for child in first:
            sup.stop([child], self.policy.stop_first_grace_s)
        return bool(first)

    def stop(self) -> None:
        """Stop the run in the policy's order: the ``stop_first`` children, then
        ``end_grace_s`` for the others to end by themselves, then the rest."""
        sup = self.supervisor
        if self.stop_first() and self.policy.end_grace_s > 0:
            deadline = time.monotonic() + self.policy.end_grace_s
            while sup.running() and time.monotonic() < deadline:
                sup.wait(self.policy.interval_s)
        sup.stop()

    def failure(self, exclude: Iterable[str] = ()) -> Outcome | None:
        """The root cause among the children that failed, if any did, leaving out the
        tolerated ones and ``exclude`` (children the caller let go, say)."""
        return self.supervisor.failure(exclude={*self.policy.tolerated, *exclude})


class ChildFailedError(DmxError):
    """A child of a run failed: the one error family of every run that has children
    (a network's :class:`~dmxshm.network.NetworkError`, a batch's
    :class:`~dmxshm.batch.vector.WorkerError`, a spine's ``SpineProcessError``).

    Attributes:
        role: the name of the child at the root cause (``renderer-0``, ``batch-1``).
        pid: its pid.
        cause: how it ended, in a few words (``"signal 9 (SIGKILL)"``, the exception).
        outcome: how it ended, in full (:class:`~dmxshm.proc.outcome.Outcome`).
    """

    def __init__(self, message: str, *, role: str, pid: int, cause: str,
                 outcome: Outcome | None = None) -> None:
        super().__init__(message)
        self.role = role
        self.pid = pid
        self.cause = cause
        self.outcome = outcome

    @classmethod
    def of(cls, o: Outcome, longer_wait: str | None = None) -> ChildFailedError:
        """The error whose root cause is ``o`` (the message: :func:`explain`)."""
        return cls(explain(o, longer_wait), role=o.name, pid=o.pid, cause=short_cause(o),
                   outcome=o)


def short_cause(o: Outcome) -> str:
    """How ``o`` ended, in a few words (a stopped or hung child: what the watch saw)."""
    return {Cause.STOPPED: o.message,
            Cause.HUNG: o.message.partition(";")[0]}.get(o.cause, o.describe())


def explain(o: Outcome, longer_wait: str | None = None) -> str:
    """The message of a run's error whose root cause is ``o``: who (name and pid),
    how it ended, and what to do; one that raised brings its traceback.

    Args:
        o: the root cause.
        longer_wait: for a stopped child, the setting that lets the others
            wait longer (``--timeout``), proposed beside SIGCONT.

    Example:
        >>> explain(Outcome("bus", 42, Cause.KILLED, signum=9, message="signal 9 (SIGKILL)"))
        'bus (pid 42) died: signal 9 (SIGKILL); the run was stopped.'
    """
    if o.cause is Cause.STOPPED:
        fix = f" or raise {longer_wait}" if longer_wait else ""
        # Its peers timed out waiting for it, or (nobody waits: realtime) the watch
        # saw it stopped for longer than the run allows.
        seen = o.message.removeprefix("stopped (SIGSTOP?)").strip()
        return (f"{o.name} (pid {o.pid}) is stopped{' ' + seen if seen else ''} and stalled "
                f"the run, which was ended. Resume it with SIGCONT{fix}.")
    if o.cause is Cause.HUNG:
        return f"{o.name} (pid {o.pid}) {o.message}"
    if o.cause in (Cause.SIGNALLED, Cause.KILLED, Cause.EXITED):
        return f"{o.headline()}; the run was stopped."
    if o.cause is Cause.PEER:  # its own message says whom it waited for: no traceback
        slow = longer_wait and o.error_name.endswith("TimeoutError")
        return o.headline() + (f" If it is only slow, raise {longer_wait}." if slow else "")
    return f"{o.headline()}\n--- traceback of {o.name} ---\n{o.traceback.rstrip()}"
