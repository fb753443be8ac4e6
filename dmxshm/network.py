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
import time
from collections.abc import Callable
from multiprocessing.connection import wait as wait_any
from typing import Any

from dmxshm.child import ErrorReport, child_main, role_name
from dmxshm.errors import DmxError
from dmxshm.plan import (
    NetworkConfig,
    Plan,
    cmd_slot_dtype,
    make_plan,
    obs_slot_dtype,
    state_slot_dtype,
)
from dmxshm.shm.barrier import Barrier
from dmxshm.shm.clean import sweep
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from dmxshm.summary import Summary, summarize

WATCH_INTERVAL_S = 0.05
STOP_GRACE_S = 2.0
# After the first failure, how long to wait for the others' reports, so the
# root cause (the process that died first) is named, not its waiting peers.
REPORT_GRACE_S = 0.3
# Once the engine has finished, how long the others get to finish too.
END_GRACE_S = 2.0
# Errors of processes that only noticed someone else's death.
_SECONDARY = {"PeerDiedError", "RingClosedError", "BrokenBarrierError", "SystemExit"}


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
        self._state_ring: Ring | None = None

    # -- lifecycle -------------------------------------------------------------
    def __enter__(self) -> Network:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Sweep orphans, create the rings, spawn every process."""
        self.swept = len(sweep())
        cfg = self.config
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
            start = Barrier.create(reg, "start", self.plan.parties)
            self.plan = dataclasses.replace(self.plan, start_barrier=start.name)
            start.close()
            ctx = mp.get_context("spawn")
            roles = ([("engine", 0)] + [("renderer", r) for r in range(cfg.renderers)]
                     + [("agent", a) for a in range(cfg.agents)])
            for role, index in roles:
                mine, theirs = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=child_main, args=(role, index, self.plan, theirs),
                                   name=f"dmx-{role_name(role, index)}", daemon=True)
                proc.start()
                theirs.close()
                self.children.append(_Child(role, index, proc, mine))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop every child (SIGTERM, then SIGKILL) and unlink every ring."""
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
        for child in children:
            if child.proc.is_alive():
                child.proc.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for child in children:
            child.proc.join(max(deadline - time.monotonic(), 0.0))
            if child.proc.is_alive():
                child.proc.kill()
                child.proc.join(STOP_GRACE_S)

    # -- running ---------------------------------------------------------------
    def progress(self) -> int:
        """Engine steps published so far."""
        return self._state_ring.stats().writes if self._state_ring else 0

    def run(self, on_progress: Callable[[int], None] | None = None) -> Summary:
        """Watch the processes until they all finish; return the summary.

        Args:
            on_progress: called with the engine's step count while it runs.

        Raises:
            NetworkError: a process died or raised; names it and the cause.
        """
        if self.plan is None:
            self.start()
        t0 = time.monotonic()
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
            if failed_at is None and self._failure() is not None:
                failed_at = time.monotonic()
            if failed_at is not None and time.monotonic() - failed_at > REPORT_GRACE_S:
                break
            if engine_done_at is None and self.children[0].message is not None:
                engine_done_at = time.monotonic()
            if engine_done_at is not None and time.monotonic() - engine_done_at > END_GRACE_S:
                # The run is over; whoever still works on it is hung (e.g. a
                # realtime agent stuck in its policy): stop it, report it.
                stragglers = [c for c in self.children if c.message is None]
                self._stop(stragglers)
                self.unfinished = [c.name for c in stragglers]
                break
            if on_progress is not None:
                on_progress(self.progress())
        wall_s = time.monotonic() - t0
        failure = self._failure(exclude=set(self.unfinished))
        if failure is not None:
            raise failure
        assert self.plan is not None
        results = {c.name: c.message[1] for c in self.children if c.message}
        if self.unfinished and self.config.mode == "gym":
            raise NetworkError(
                f"{', '.join(self.unfinished)} did not finish within {END_GRACE_S} s of the "
                "engine's last step", role=self.unfinished[0], pid=0, cause="hung")
        summary = summarize(self.plan, results, wall_s)
        summary.unfinished = list(self.unfinished)
        return summary

    def _failure(self, exclude: set[str] | frozenset[str] = frozenset()) -> NetworkError | None:
        """The root cause among the children that failed, if any did."""
        failed = []
        for c in self.children:
            if c.name in exclude:
                continue
            code = c.proc.exitcode
            if c.message is not None and c.message[0] == "error":
                failed.append((c, c.message[1]))
            elif code is not None and (code != 0 or c.message is None):
                failed.append((c, None))
        if not failed:
            return None

        def rank(item: tuple[_Child, ErrorReport | None]) -> int:
            child, report = item
            if report is None:
                return 0  # killed by a signal or died silently: the root cause
            return 2 if report.kind in _SECONDARY else 1
        child, report = min(failed, key=rank)
        pid = child.proc.pid or 0
        if report is None:
            code = child.proc.exitcode
            cause = (f"signal {-code} ({_signame(-code)})" if code is not None and code < 0
                     else f"exit code {code} without a report")
            hint = ""
            if code is not None and code > 0:
                hint = (" It failed before it could run: children are spawned and import the"
                        " main module again, so a script that starts a network must do it under"
                        " `if __name__ == \"__main__\":`; its stderr above shows the error.")
            return NetworkError(f"{child.name} (pid {pid}) died: {cause}; the run was stopped."
                                + hint, role=child.name, pid=pid, cause=cause)
        cause = f"{report.kind}: {report.message}"
        return NetworkError(
            f"{child.name} (pid {pid}) failed: {cause}\n--- traceback of {child.name} ---\n"
            f"{report.traceback.rstrip()}", role=child.name, pid=pid, cause=cause)


def _signame(signum: int) -> str:
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return "unknown"
