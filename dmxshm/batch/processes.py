"""A batch's worker processes, from the parent's side: started by the process layer
(:mod:`dmxshm.proc`), watched (a worker's end becomes :class:`WorkerError`, worded as
every run's: the process layer's cause, and the traceback of an error it raised; a
worker that does not answer, a timeout that names it), and stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

from dmxshm import settings
from dmxshm.batch.worker import CLOSE, BatchPorts, run_worker
from dmxshm.errors import DmxTimeoutError
from dmxshm.proc.outcome import Cause, Outcome
from dmxshm.proc.supervisor import Child, Supervisor
from dmxshm.proc.watch import ChildFailedError, short_cause
from dmxshm.shm.names import make_name
from dmxshm.shm.registry import Registry


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


def start_workers(registry: Registry, supervisor: Supervisor, arrays: str,
                  bounds: list[tuple[int, int]], num_envs: int, env_kwargs: dict[str, Any],
                  spin_s: float, mode: str, robots_per_world: int | None
                  ) -> tuple[Any, Any, list[Any], list[Child]]:
    """One worker process per shard of ``bounds`` over the segment ``arrays``, and the
    semaphores of the batch (made in ``registry``). Returns ``(ready, done, go,
    workers)`` (:class:`~dmxshm.batch.worker.BatchPorts` says what each is for)."""
    from dmxshm.world.renderers import egl_device

    token, count = registry.token, len(bounds)
    ports = BatchPorts(arrays=arrays, ready=make_name(token, "batch.ready"),
                       done=make_name(token, "batch.done"),
                       go=tuple(make_name(token, f"batch.go.{w}") for w in range(count)))
    ready = registry.create_semaphore(ports.ready, 0)
    done = registry.create_semaphore(ports.done, 0)
    go = [registry.create_semaphore(name, 0) for name in ports.go]
    workers: list[Child] = []
    for w, (lo, hi) in enumerate(bounds):
        workers.append(supervisor.start(
            f"batch-{w}", run_worker, w, ports, lo, hi, num_envs, count, env_kwargs,
            os.getpid(), spin_s, mode, egl_device(), robots_per_world,
            # An owner killed (Ray kills an actor so) cannot unlink: its workers,
            # told by SIGTERM, unlink the batch's objects.
            death_signal=signal.SIGTERM))
    return ready, done, go, workers


def stop_workers(workers: list[Child], go: list[Any], command: Any) -> None:
    """Tell every live worker to close (``command``: the batch's command words), and
    give them :data:`~dmxshm.settings.STOP_GRACE_S` together to end (the supervisor
    stops the others)."""
    if workers:
        command[:] = CLOSE
        for child, sem in zip(workers, go, strict=False):  # a partial init
            if child.alive():
                sem.release()
    deadline = time.monotonic() + settings.STOP_GRACE_S
    for child in workers:
        if not child.stopped():  # a stopped one cannot answer: no grace
            try:
                child.popen.wait(max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                pass  # stopped by the supervisor


def failed_worker(workers: list[Child], supervisor: Supervisor) -> WorkerError | None:
    """The error for the root cause if some worker ended: every worker's news first,
    then the one ranked first (the process layer's ranking, as the network's and the
    spine's), not the first in index order; a worker that returned ended too."""
    for child in workers:
        child.refresh()
    cause = supervisor.failure()
    if cause is not None:
        return worker_error(workers.index(supervisor.child(cause.name)), cause)
    for w, child in enumerate(workers):
        if child.outcome is not None:
            return worker_error(w, child.outcome)
    return None


def late_worker(workers: list[Child], w: int, timeout_s: float) -> DmxTimeoutError:
    """Worker ``w`` did not answer a command within ``timeout_s``."""
    child = workers[w]
    state = " and is stopped (SIGSTOP?)" if child.stopped() else ""
    return DmxTimeoutError(f"batch worker {w} (pid {child.pid}) did not answer within "
                           f"{timeout_s:g} s{state}")


def stopped_workers(workers: list[Child]) -> str:
    """The workers stopped by a signal (SIGSTOP), for a timeout's message ("" if none)."""
    stopped = [f"{w} (pid {c.pid})" for w, c in enumerate(workers) if c.stopped()]
    return f"; stopped (SIGSTOP?): batch worker {', '.join(stopped)}" if stopped else ""
