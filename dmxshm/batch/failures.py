"""How a batch's worker failing reaches the caller: :class:`WorkerError`, worded as
every run's (the process layer's cause, the traceback of an error it raised)."""

from __future__ import annotations

from dmxshm.proc.outcome import Cause, Outcome
from dmxshm.proc.watch import ChildFailedError, short_cause


class WorkerError(ChildFailedError):
    """A batch worker died or raised; names the worker (``role``: ``batch-W``), its pid
    and the cause."""


def worker_error(w: int, outcome: Outcome) -> WorkerError:
    """The error of worker ``w``'s end, worded as every run's (proc.watch.explain's
    cause, with the traceback only of an error it raised)."""
    cause = "it ended" if outcome.ok else short_cause(outcome)
    detail = (f"\n{outcome.traceback.rstrip()}" if outcome.traceback
              and outcome.cause in (Cause.RAISED, Cause.PEER) else "")
    return WorkerError(f"batch worker {w} (pid {outcome.pid}) failed: {cause}{detail}",
                       role=outcome.name, pid=outcome.pid, cause=cause, outcome=outcome)
