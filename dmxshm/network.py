"""The supervisor: create the rings, spawn the processes, watch, tear down.

:class:`Network` is usable from Python without the CLI::

    from dmxshm.network import Network
    from dmxshm.plan import NetworkConfig

    with Network(NetworkConfig(robots=2, steps=300)) as net:
        summary = net.run()
    print(summary.steps_per_s, summary.trajectory_digest)

Every exit path (normal end, exception, Ctrl-C, SIGTERM, a child that dies)
stops every child and unlinks every ring: the registry owns them all.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import wait as wait_any
from typing import Any

from dmxshm import signals
from dmxshm.agent import resolve
from dmxshm.child import child_main, describe_exit, role_name, stop_processes
from dmxshm.errors import DmxError
from dmxshm.plan import (
    NetworkConfig,
    Plan,
    cmd_slot_dtype,
    make_plan,
    obs_slot_dtype,
    state_slot_dtype,
)
from dmxshm.profiling import Profiler, shm_sizes
from dmxshm.shm.barrier import Barrier
from dmxshm.shm.clean import sweep
from dmxshm.shm.peers import pid_stopped
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from dmxshm.summary import Summary, summarize
from dmxshm.world.maps import load_map

WATCH_INTERVAL_S = 0.05
STOP_GRACE_S = 2.0
# After the first failure, how long to wait for the others' reports, so the
# root cause (the process that died first) is named, not its waiting peers.
REPORT_GRACE_S = 0.3
# Once the engine has finished, how long the others get to finish too.
END_GRACE_S = 2.0
# Errors of processes that only noticed someone else's death.
_SECONDARY = {"PeerDiedError", "RingClosedError", "BrokenBarrierError", "RingTimeoutError",
              "BarrierTimeoutError"}


class NetworkError(DmxError):
    """A process of the network failed; the message names it and the cause.

    Attributes:
        role: role of the process that failed first (``renderer-0``...).
        pid: its pid.
        cause: ``"signal N (NAME)"``, ``"exit code N"`` or the exception.
    """

    def __init__(self, message: str, *, role: str, pid: int, cause: str) -> None:
        super().__init__(message)
        self.role = role
        self.pid = pid
        self.cause = cause


@dataclasses.dataclass
class _Child:
    role: str
    index: int
    proc: Any
    conn: Any
    message: tuple[str, Any] | None = None
    ended_at: float | None = None
    hung_for_s: float | None = None

    @property
    def name(self) -> str:
        return role_name(self.role, self.index)


class Network:
    """One run: engine, renderers and agents over shared-memory rings."""

    def __init__(self, config: NetworkConfig) -> None:
        self.config = config
        self.registry: Registry | None = None
        self.plan: Plan | None = None
        self.children: list[_Child] = []
        self.swept = 0
        self.unfinished: list[str] = []
        self._restore_sigterm = False
        self._state_ring: Ring | None = None
        self.profiler: Profiler | None = None

    # -- lifecycle -------------------------------------------------------------
    def __enter__(self) -> Network:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Sweep orphans, create the rings, spawn every process."""
        cfg = self.config
        # What can be checked here fails here, with a plain error, not in a child.
        resolve(cfg.agent)
        load_map(cfg.map)
        self._catch_sigterm()
        self.swept = len(sweep())
        self.registry = reg = Registry()
        try:
            plan = make_plan(cfg)
            disc = "blocking" if cfg.mode == "gym" else "overwrite"
            nslots = 2 if cfg.mode == "gym" else 4
            state_dt = state_slot_dtype(cfg.robots)
            rings = [Ring.create(reg, f"state.{r}", state_dt, nslots, disc)
                     for r in range(cfg.renderers)]
            self._state_ring = rings[0]
            links = []
            for link in plan.links:
                ring = Ring.create(reg, f"obs.{link.renderer}.{link.agent}",
                                   obs_slot_dtype(cfg, len(link.robots)), nslots, disc)
                links.append(dataclasses.replace(link, ring=ring.name))
                ring.close()
            cmd = [Ring.create(reg, f"cmd.{a}", cmd_slot_dtype(len(robots)), nslots, disc)
                   for a, robots in enumerate(plan.agent_robots)]
            self.plan = dataclasses.replace(
                plan, links=tuple(links), state_rings=tuple(r.name for r in rings),
                cmd_rings=tuple(r.name for r in cmd))
            for ring in [*rings[1:], *cmd]:
                ring.close()
            if cfg.floor_rounds:
                from dmxshm.floor import floor_names

                for names in floor_names(self.plan).values():
                    for name in names:
                        reg.create_semaphore(name, 0).close()
            if cfg.spine:
                from dmxshm.spine.network_spine import spine_reply_dtype

                to_engine = Ring.create(reg, "spine.cmd", cmd_slot_dtype(cfg.robots), nslots,
                                        disc)
                to_spine = Ring.create(reg, "spine.reply", spine_reply_dtype(cfg.robots),
                                       nslots, disc)
                self.plan = dataclasses.replace(
                    self.plan, spine_rings=(to_engine.name, to_spine.name))
                to_engine.close()
                to_spine.close()
            start = Barrier.create(reg, "start", self.plan.parties)
            self.plan = dataclasses.replace(self.plan, start_barrier=start.name)
            start.close()
            ctx = mp.get_context("spawn")
            roles = ([("engine", 0)] + [("renderer", r) for r in range(cfg.renderers)]
                     + [("agent", a) for a in range(cfg.agents)]
                     + ([("spine", 0)] if cfg.spine else []))
            for role, index in roles:
                mine, theirs = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=child_main,
                                   args=(role, index, self.plan, theirs, os.getpid()),
                                   name=f"dmx-{role_name(role, index)}", daemon=True)
                proc.start()
                theirs.close()
                self.children.append(_Child(role, index, proc, mine))
            if cfg.profile:
                self.profiler = Profiler(
                    {"supervisor": os.getpid(), **{c.name: c.proc.pid for c in self.children}},
                    cfg.profile_interval_s, shm=lambda: shm_sizes(reg.names))
        except BaseException:
            self.close()
            raise

    def _catch_sigterm(self) -> None:
        # SIGTERM must unwind like Ctrl-C so that close() runs. Only from the
        # main thread, and only if nobody else handles SIGTERM already.
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            self._restore_sigterm = signals.install()

    def close(self) -> None:
        """Stop every child (SIGTERM, then SIGKILL) and unlink every ring."""
        if self._restore_sigterm:
            signals.uninstall()
            self._restore_sigterm = False
        try:
            self._stop(self.children)
            for child in self.children:
                child.conn.close()
            self.children = []
            if self._state_ring is not None:
                self._state_ring.close()
                self._state_ring = None
        finally:
            if self.registry is not None:
                self.registry.unlink_all()

    @staticmethod
    def _stop(children: list[_Child]) -> None:
        stop_processes([c.proc for c in children], STOP_GRACE_S)

    # -- running ---------------------------------------------------------------
    def progress(self) -> int:
        """Engine steps published so far."""
        return self._state_ring.stats().writes if self._state_ring else 0

    def run(self, on_progress: Callable[[int], None] | None = None,
            on_profile: Callable[[Profiler], None] | None = None) -> Summary:
        """Watch the processes until they all finish; return the summary.

        Args:
            on_progress: called with the engine's step count while it runs.
            on_profile: with ``profile`` on, called after each sample.

        Raises:
            NetworkError: a process died or raised; names it and the cause.
        """
        if self.plan is None:
            self.start()
        pending: dict[Any, _Child] = {c.conn: c for c in self.children}
        sentinels: dict[Any, _Child] = {c.proc.sentinel: c for c in self.children}
        failed_at: float | None = None
        engine_done_at: float | None = None
        while pending or any(c.proc.is_alive() for c in self.children):
            ready: list[Any] = wait_any([*pending, *sentinels], timeout=WATCH_INTERVAL_S)
            for obj in ready:
                if obj in pending:
                    child = pending.pop(obj)
                    try:
                        child.message = obj.recv()
                    except EOFError:  # died without a word: the sentinel tells how
                        pass
                elif obj in sentinels:
                    child = sentinels.pop(obj)
                    child.proc.join()
                    if child.conn in pending and not child.conn.poll():
                        pending.pop(child.conn)
                else:
                    continue
                if child.ended_at is None:
                    child.ended_at = time.monotonic()
            if failed_at is None and self._failure() is not None:
                failed_at = time.monotonic()
            if failed_at is not None and time.monotonic() - failed_at > REPORT_GRACE_S:
                break
            if engine_done_at is None and self.children[0].message is not None:
                engine_done_at = time.monotonic()
                if self.profiler is not None:  # the others are still there: USS, PSS now
                    self.profiler.final_sample()
            elif self.profiler is not None and self.profiler.maybe_sample() and on_profile:
                on_profile(self.profiler)
            if engine_done_at is not None and self._stragglers(engine_done_at):
                break
            signals.check()
            if on_progress is not None:
                on_progress(self.progress())
        failure = self._failure(exclude=set(self.unfinished))
        if failure is not None:
            raise failure
        assert self.plan is not None
        results = {c.name: c.message[1] for c in self.children if c.message}
        summary = summarize(self.plan, results)
        summary.unfinished = list(self.unfinished)
        if self.registry is not None:
            summary.shm_bytes = sum(shm_sizes(self.registry.names).values())
        if self.profiler is not None:
            self.profiler.stop()
            report = self.profiler.report()
            summary.processes = report.pop("processes")
            summary.profile = report
        return summary

    def _stragglers(self, engine_done_at: float) -> bool:
        """After the engine's end, stop processes that do not finish; True if done.

        A realtime agent stuck in its policy is tolerated (its robots simply
        stopped, their commands expired): it is stopped after END_GRACE_S and
        listed in ``unfinished``. A renderer gets ``wait_timeout_s`` (it may be
        in the middle of a slow frame); in gym mode nothing may be left over.
        """
        waited = time.monotonic() - engine_done_at
        left = [c for c in self.children if c.message is None and c.ended_at is None]
        if not left:
            return False
        tolerated = self.config.mode == "realtime" and all(c.role == "agent" for c in left)
        limit = END_GRACE_S if tolerated else max(END_GRACE_S, self.config.wait_timeout_s)
        if waited <= limit:
            return False
        self._stop(left)
        if tolerated:
            self.unfinished = [c.name for c in left]
            return True
        for c in left:  # reported as failures, with how long they were given
            c.hung_for_s = waited
        return True

    def _failure(self, exclude: set[str] | frozenset[str] = frozenset()) -> NetworkError | None:
        """The root cause among the children that failed, if any did.

        Ranked: a child killed by a signal, stopped, hung or silent first
        (it is where the trouble started), then one that raised its own
        error, then one that only saw a peer die or time out; ties go to the
        one that ended first.
        """
        failed = []
        for c in self.children:
            if c.name in exclude:
                continue
            code = c.proc.exitcode
            if c.hung_for_s is not None:
                failed.append((0, c, None))
            elif c.message is not None and c.message[0] == "error":
                report = c.message[1]
                if report.kind == "Terminated":
                    failed.append((0, c, report))
                else:
                    failed.append((2 if report.kind in _SECONDARY else 1, c, report))
            elif code is not None and (code != 0 or c.message is None):
                failed.append((0, c, None))
        if not failed:
            return None
        if all(rank > 0 for rank, _, _ in failed):
            stopped = [c for c in self.children if pid_stopped(c.proc.pid)]
            if stopped:  # the others timed out waiting on it
                c = stopped[0]
                cause = "stopped (SIGSTOP?)"
                return NetworkError(
                    f"{c.name} (pid {c.proc.pid}) is stopped and stalled the run; the others "
                    "timed out waiting for it. Resume it with SIGCONT or raise --timeout.",
                    role=c.name, pid=c.proc.pid or 0, cause=cause)
        _, child, report = min(failed, key=lambda f: (f[0], f[1].ended_at or float("inf")))
        pid = child.proc.pid or 0
        if child.hung_for_s is not None:
            cause = f"hung: no end {child.hung_for_s:.1f} s after the engine's last step"
            return NetworkError(f"{child.name} (pid {pid}) {cause}; it was stopped",
                                role=child.name, pid=pid, cause=cause)
        if report is None or report.kind == "Terminated":
            code = child.proc.exitcode
            if report is not None:
                cause = report.message
            elif code is not None and code < 0:
                cause = describe_exit(code)
            else:
                cause = f"exit code {code} without a report"
            hint = ""
            if report is None and code is not None and code > 0:
                hint = (" It failed before it could run: children are spawned and import the"
                        " main module again, so a script that starts a network must do it under"
                        " `if __name__ == \"__main__\":`; its stderr above shows the error.")
            return NetworkError(f"{child.name} (pid {pid}) died: {cause}; the run was stopped."
                                + hint, role=child.name, pid=pid, cause=cause)
        cause = f"{report.kind}: {report.message}"
        return NetworkError(
            f"{child.name} (pid {pid}) failed: {cause}\n--- traceback of {child.name} ---\n"
            f"{report.traceback.rstrip()}", role=child.name, pid=pid, cause=cause)
