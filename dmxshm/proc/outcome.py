"""How a child process ended, as one typed object, and which failure is the root cause.

A child sends exactly one :class:`Outcome` to its supervisor: what it
returned, or what it raised (type, message, traceback and, for an error that
only reports a peer's failure, who failed). A child that dies without a
word (killed by a signal, or exiting early) gets its outcome from its exit
status; one that never ends, or is stopped, gets it from its supervisor.

:func:`root_cause` ranks failures: where the trouble started comes before
the errors of the processes that only saw it.
"""

from __future__ import annotations

import enum
import signal
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from dmxshm.errors import (
    BarrierTimeoutError,
    BrokenBarrierError,
    PeerDiedError,
    RingClosedError,
    RingTimeoutError,
)

SECONDARY_ERRORS: tuple[type[BaseException], ...] = (
    PeerDiedError, RingClosedError, BrokenBarrierError, RingTimeoutError, BarrierTimeoutError)
"""Errors of a process that only noticed someone else's death or silence."""


class Terminated(SystemExit):
    """This child was told to stop by a signal (SIGTERM).

    Attributes:
        signum: the signal.
        partial: what the child had done when it was stopped (its result so
            far), set by the code it unwinds through; it reaches the
            supervisor as the outcome's ``result``.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum
        self.partial: Any = None

    def __str__(self) -> str:
        return describe_signal(self.signum)


class Cause(enum.Enum):
    """Why a child ended."""

    OK = "ok"  # returned normally
    RAISED = "raised"  # raised an error of its own
    PEER = "peer"  # raised because a peer died, closed or fell silent
    SIGNALLED = "signalled"  # told to stop by a signal, and unwound
    KILLED = "killed"  # died by a signal, without a word
    EXITED = "exited"  # ended without a report (exit status in ``exitcode``)
    HUNG = "hung"  # did not end in time; its supervisor stopped it
    STOPPED = "stopped"  # is stopped (SIGSTOP) and stalled the run

    @property
    def rank(self) -> int:
        """0: where trouble starts; 1: its own error; 2: a peer's trouble seen."""
        return {Cause.RAISED: 1, Cause.PEER: 2}.get(self, 0)


def describe_signal(signum: int) -> str:
    """``signal 9 (SIGKILL)``."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = "unknown"
    return f"signal {signum} ({name})"


@dataclass(frozen=True)
class Outcome:
    """How one child ended.

    Attributes:
        name: the child's name (``engine``, ``renderer-1``, ``batch-0``...).
        pid: its pid.
        cause: why it ended.
        result: what its main function returned (``cause`` OK), or what it had
            done when a signal stopped it (``signalled``; see :class:`Terminated`).
        error_type: qualified name of the exception it raised, if any.
        message: the exception's message, or what the supervisor saw.
        traceback: the formatted traceback, if it raised.
        peer_role, peer_pid: for :class:`~dmxshm.errors.PeerDiedError`, who died.
        exitcode: its exit status once known (negative: killed by that signal).
        signum: the signal that ended it (SIGNALLED, KILLED).
    """

    name: str
    pid: int
    cause: Cause
    result: Any = None
    error_type: str = ""
    message: str = ""
    traceback: str = ""
    peer_role: str | None = None
    peer_pid: int | None = None
    exitcode: int | None = None
    signum: int | None = None

    @property
    def ok(self) -> bool:
        return self.cause is Cause.OK

    @classmethod
    def of_exception(cls, name: str, pid: int, exc: BaseException, tb: str) -> Outcome:
        """What a child that raised ``exc`` reports."""
        result = None
        if isinstance(exc, Terminated):
            cause, signum, result = Cause.SIGNALLED, exc.signum, exc.partial
        else:
            cause = Cause.PEER if isinstance(exc, SECONDARY_ERRORS) else Cause.RAISED
            signum = None
        kind = type(exc)
        qual = kind.__qualname__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__qualname__}"
        return cls(name=name, pid=pid, cause=cause, result=result, error_type=qual,
                   message=str(exc), traceback=tb, signum=signum,
                   peer_role=exc.role if isinstance(exc, PeerDiedError) else None,
                   peer_pid=exc.pid if isinstance(exc, PeerDiedError) else None)

    @classmethod
    def of_exit(cls, name: str, pid: int, exitcode: int | None,
                reported: bool = False) -> Outcome:
        """What the exit status says of a child that sent nothing (or that reported
        success, then ended badly: ``reported``)."""
        after = " after it reported success" if reported else ""
        if exitcode is not None and exitcode < 0:
            return cls(name=name, pid=pid, cause=Cause.KILLED, exitcode=exitcode,
                       signum=-exitcode, message=describe_signal(-exitcode) + after)
        what = after or " without a report; its error is on stderr above"
        return cls(name=name, pid=pid, cause=Cause.EXITED, exitcode=exitcode,
                   message=f"exit code {exitcode}{what}")

    def headline(self) -> str:
        """``renderer-0 (pid 42) died: signal 9 (SIGKILL)``, or ``... failed: ValueError: ...``."""
        if self.cause is Cause.STOPPED:  # not an end: it is there, stopped
            return f"{self.name} (pid {self.pid}) is {self.message}"
        verb = "died" if self.cause in (Cause.SIGNALLED, Cause.KILLED, Cause.EXITED) \
            else "failed"
        return f"{self.name} (pid {self.pid}) {verb}: {self.describe()}"

    def with_exit(self, exitcode: int | None) -> Outcome:
        return replace(self, exitcode=exitcode)

    @property
    def error_name(self) -> str:
        """The exception's class name without its module."""
        return self.error_type.rpartition(".")[2]

    def describe(self) -> str:
        """One line: ``signal 9 (SIGKILL)``, ``ValueError: ...``, ``exit code 1 ...``."""
        if self.cause in (Cause.SIGNALLED, Cause.KILLED) and self.signum is not None:
            return self.message or describe_signal(self.signum)
        if self.error_type:
            return f"{self.error_name}: {self.message}" if self.message else self.error_name
        return self.message or self.cause.value


def root_cause(outcomes: Iterable[tuple[Outcome, float]]) -> Outcome | None:
    """The failure where the trouble started, among ``(outcome, ended_at)`` pairs.

    Ranked by :attr:`Cause.rank` (a child killed, signalled, stopped, hung
    or silent first, then one that raised its own error, then one that only
    saw a peer fail); ties go to the one that ended first.
    """
    failed = [(o.cause.rank, t, o) for o, t in outcomes if not o.ok]
    if not failed:
        return None
    return min(failed, key=lambda f: (f[0], f[1]))[2]
